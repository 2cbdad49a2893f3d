import { expect } from 'chai';
import { HOW_TO_GET_A_DEVELOPER_TOKEN } from '../authorization.js';
import type { UserPrincipal } from '../model.js';
import { deleteClient, listClients, registerClient, rotateClientSecret } from './clients.js';
import { failure } from './assertions.test-support.js';
import { fakePlatform, NOW } from './fakes.test-support.js';

const developerTokenRequired = { name: 'ForbiddenError', kind: 'forbidden', code: 'developer_token_required', message: `This operation needs a developer token, not a workspace client's or a user's. ${HOW_TO_GET_A_DEVELOPER_TOKEN}` };
const acmeNotFound = { name: 'NotFoundError', kind: 'not_found', code: 'workspace_not_found', message: "Workspace 'acme' not found" };
const ownerRequired = (action: string) => ({ name: 'ForbiddenError', kind: 'forbidden', code: 'owner_required', message: `Only an owner of the workspace can ${action}` });
const user: UserPrincipal = { kind: 'user', userId: 'user-1', databaseId: 'db-acme-main', sessionId: 'session-1' };

function clientNotFound(id: string) {
  return { name: 'NotFoundError', kind: 'not_found', code: 'client_not_found', message: `Client '${id}' not found` };
}

describe('client use cases', () => {
  let p: ReturnType<typeof fakePlatform>;

  beforeEach(() => {
    p = fakePlatform();
  });

  describe('registerClient', () => {
    it('registers a confidential client, whose secret is answered once and stored as a digest', async () => {
      const registered = await registerClient(p.deps, p.alice, 'acme', {
        name: '  Backend  ',
        type: 'confidential',
        redirectUris: ['https://app.example.com/cb', 'https://app.example.com/cb', 'http://127.0.0.1/cb'],
      });
      expect(registered).to.deep.equal({
        client: { id: 'client-2', workspaceId: p.acme.id, name: 'Backend', type: 'confidential', redirectUris: ['https://app.example.com/cb', 'http://127.0.0.1/cb'], created: NOW },
        secret: 'secret-1',
      });
      expect(p.deps.clients.rows[0]).to.include({ secretDigest: '1-terces', createdBy: 'dev-alice' });
    });

    it('registers a public client without a secret', async () => {
      const registered = await registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/callback'] });
      expect(registered.secret).to.equal(null);
      expect(p.deps.clients.rows[0].secretDigest).to.equal(null);
    });

    it('refuses a redirect URI the client type may not use (400)', async () => {
      expect(await failure(registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: ['https://app.example.com/cb'] }))).to.deep.equal({
        name: 'ValidationError',
        kind: 'validation',
        code: 'invalid_redirect_uri',
        message: "A public client's redirect URIs must be loopback http URLs; 'https://app.example.com/cb' is not",
      });
    });

    it('is for developers of the workspace only: 403 for user and client tokens, 404 for a stranger', async () => {
      const input = { name: 'CLI', type: 'public' as const, redirectUris: ['http://127.0.0.1/callback'] };
      expect(await failure(registerClient(p.deps, user, 'acme', input))).to.deep.equal(developerTokenRequired);
      expect(await failure(registerClient(p.deps, p.acmeClient, 'acme', input))).to.deep.equal(developerTokenRequired);
      expect(await failure(registerClient(p.deps, p.mallory, 'acme', input))).to.deep.equal(acmeNotFound);
      expect(p.deps.clients.rows).to.deep.equal([]);
    });
  });

  describe('listClients', () => {
    it('lists the workspace’s clients for its developers only', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/callback'] });
      expect(await listClients(p.deps, p.alice, 'acme')).to.deep.equal([client]);
      expect(await failure(listClients(p.deps, p.acmeClient, 'acme'))).to.deep.equal(developerTokenRequired);
      expect(await failure(listClients(p.deps, user, 'acme'))).to.deep.equal(developerTokenRequired);
      expect(await failure(listClients(p.deps, p.mallory, 'acme'))).to.deep.equal(acmeNotFound);
    });
  });

  describe('rotateClientSecret', () => {
    it('replaces a confidential client’s secret at once', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'Backend', type: 'confidential', redirectUris: [] });
      expect(await rotateClientSecret(p.deps, p.alice, 'acme', client.id)).to.deep.equal({ client, secret: 'secret-3' });
      expect(p.deps.clients.rows[0].secretDigest).to.equal('3-terces');
    });

    it('refuses a public client (400) and answers an unknown one 404', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: [] });
      expect(await failure(rotateClientSecret(p.deps, p.alice, 'acme', client.id))).to.deep.equal({
        name: 'ValidationError',
        kind: 'validation',
        code: 'public_client',
        message: 'A public client has no secret',
      });
      expect(await failure(rotateClientSecret(p.deps, p.alice, 'acme', 'client-none'))).to.deep.equal(clientNotFound('client-none'));
    });

    it('refuses user and client tokens (403) and answers a stranger 404', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'Backend', type: 'confidential', redirectUris: [] });
      expect(await failure(rotateClientSecret(p.deps, user, 'acme', client.id))).to.deep.equal(developerTokenRequired);
      expect(await failure(rotateClientSecret(p.deps, p.acmeClient, 'acme', client.id))).to.deep.equal(developerTokenRequired);
      expect(await failure(rotateClientSecret(p.deps, p.mallory, 'acme', client.id))).to.deep.equal(acmeNotFound);
      expect(p.deps.clients.rows[0].secretDigest).to.equal('1-terces');
    });
  });

  describe('deleteClient', () => {
    it('deletes a client of the workspace, after which it is not found', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: [] });
      await deleteClient(p.deps, p.alice, 'acme', client.id);
      expect(await listClients(p.deps, p.alice, 'acme')).to.deep.equal([]);
      expect(await failure(deleteClient(p.deps, p.alice, 'acme', client.id))).to.deep.equal(clientNotFound(client.id));
    });

    it('refuses user and client tokens (403) and answers a stranger 404, deleting nothing', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'CLI', type: 'public', redirectUris: [] });
      expect(await failure(deleteClient(p.deps, user, 'acme', client.id))).to.deep.equal(developerTokenRequired);
      expect(await failure(deleteClient(p.deps, p.acmeClient, 'acme', client.id))).to.deep.equal(developerTokenRequired);
      expect(await failure(deleteClient(p.deps, p.mallory, 'acme', client.id))).to.deep.equal(acmeNotFound);
      expect(await listClients(p.deps, p.alice, 'acme')).to.deep.equal([client]);
    });
  });

  describe('for owners only (issue 11, finding 6)', () => {
    it('refuses a plain member registering, replacing a secret or deleting (403), and changes nothing', async () => {
      const { client } = await registerClient(p.deps, p.alice, 'acme', { name: 'Backend', type: 'confidential', redirectUris: [] });
      const stored = { ...p.deps.clients.rows[0] };
      expect(await failure(registerClient(p.deps, p.bob, 'acme', { name: 'Mine', type: 'public', redirectUris: [] }))).to.deep.equal(ownerRequired('register clients'));
      expect(await failure(rotateClientSecret(p.deps, p.bob, 'acme', client.id))).to.deep.equal(ownerRequired('replace a client’s secret'));
      expect(await failure(deleteClient(p.deps, p.bob, 'acme', client.id))).to.deep.equal(ownerRequired('delete clients'));
      expect(p.deps.clients.rows).to.deep.equal([stored]);
    });

    it('lets a plain member list the clients', async () => {
      await registerClient(p.deps, p.alice, 'acme', { name: 'Backend', type: 'confidential', redirectUris: [] });
      expect((await listClients(p.deps, p.bob, 'acme')).map((client) => client.name)).to.deep.equal(['Backend']);
    });
  });
});
