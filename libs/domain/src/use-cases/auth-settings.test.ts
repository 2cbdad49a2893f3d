import { expect } from 'chai';
import type { DeveloperPrincipal, Workspace } from '../model.js';
import { failure } from './assertions.test-support.js';
import { MAX_APP_ORIGINS, databaseAuthSettings, normalizeAppOrigin, updateAuthSettings, type StoredAuthSettings } from './auth-settings.js';
import { FixedWorkspaces, InMemoryDatabases } from './database-fakes.test-support.js';

describe('database auth settings', () => {
  it('keeps an https origin, or http on a loopback host, without a trailing slash', () => {
    expect(normalizeAppOrigin('https://app.example.com')).to.equal('https://app.example.com');
    expect(normalizeAppOrigin('https://app.example.com:8443/')).to.equal('https://app.example.com:8443');
    expect(normalizeAppOrigin('HTTPS://App.Example.com')).to.equal('https://app.example.com');
    for (const loopback of ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']) expect(normalizeAppOrigin(loopback)).to.equal(loopback);
  });

  it('refuses plain http elsewhere, paths, queries, fragments, credentials and non-URLs', async () => {
    for (const origin of ['http://app.example.com', 'https://app.example.com/reset', 'https://app.example.com?x=1', 'https://app.example.com#x', 'https://u:p@app.example.com', 'app.example.com', 'javascript:alert(1)', 'ftp://app.example.com']) {
      expect(await failure(Promise.resolve().then(() => normalizeAppOrigin(origin))), origin).to.include({ code: 'invalid_app_origin', kind: 'validation' });
    }
    expect(MAX_APP_ORIGINS).to.equal(20);
  });

  it('follows the platform default until the database sets its own', async () => {
    const stored = new Map<string, StoredAuthSettings>();
    const authSettings = {
      find: async (id: string) => stored.get(id) ?? null,
      update: async (id: string, patch: Partial<StoredAuthSettings>) => Boolean(stored.set(id, { selfSignUp: null, appOrigins: [], ...stored.get(id), ...patch })),
    };
    expect(await databaseAuthSettings({}, 'a')).to.deep.equal({ selfSignUp: false, appOrigins: [] });
    expect(await databaseAuthSettings({ selfSignUp: true, authSettings }, 'a')).to.deep.equal({ selfSignUp: true, appOrigins: [] });
    stored.set('a', { selfSignUp: null, appOrigins: ['https://app.example.com'] });
    expect(await databaseAuthSettings({ selfSignUp: true, authSettings }, 'a')).to.deep.equal({ selfSignUp: true, appOrigins: ['https://app.example.com'] });
    stored.set('a', { selfSignUp: false, appOrigins: [] });
    expect(await databaseAuthSettings({ selfSignUp: true, authSettings }, 'a')).to.deep.equal({ selfSignUp: false, appOrigins: [] });
  });

  it('answers database_not_found, as for any missing database, when the database is purged between the check and the write', async () => {
    const acme: Workspace = { id: 'ws-acme', name: 'Acme', slug: 'acme', billingCustomerId: null, created: new Date(0) };
    const alice: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-alice', scopes: [] };
    const databases = new InMemoryDatabases([]);
    await databases.create({ id: 'db-1', workspace: acme, name: 'orders', region: 'AWS_US_WEST_2' });
    const writes: string[] = [];
    // The store finds the database's row gone when it writes (a purge committed after getDatabase read it).
    const authSettings = { find: async () => null, update: async (id: string) => (writes.push(id), false) };
    const deps = { workspaces: new FixedWorkspaces([{ workspace: acme, members: ['dev-alice'] }]), databases, authSettings };
    const error = await failure(updateAuthSettings(deps, alice, 'acme', 'orders', { selfSignUp: true }));
    expect(error).to.include({ code: 'database_not_found', kind: 'not_found', message: "Database 'orders' not found" });
    expect(writes).to.deep.equal(['db-1']);
  });
});
