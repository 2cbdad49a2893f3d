import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: which function a name resolves to is PostgreSQL's decision, so it runs against a real server.
import { dropScratchDatabase, query, withClient, type ScratchDatabase } from '@platform/testing';
import { createCredentialRole, credentialRoleName, dropCredentialRole, dropDatabaseRoles } from './credential-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

/**
 * What a customer with an unscoped credential can plant in `public`: functions named like built-ins
 * that an untyped parameter resolves to instead (text beats the built-ins' types), each recording
 * who ran it and trying to make the credential a superuser.
 */
function trojans(roleName: string): string {
  const payload = (name: string) => `
    insert into public.trojan_calls (name, run_as) values ('${name}', current_user);
    begin
      execute format('alter role %I superuser', '${roleName}');
    exception when insufficient_privilege then
      null;
    end;`;
  return `
    create table public.trojan_calls (name text not null, run_as name not null);
    grant insert on public.trojan_calls to public;
    create function public.make_interval(secs text) returns interval language plpgsql as $f$
    begin
      ${payload('make_interval')}
      return secs::float8 * interval '1 second';
    end $f$;
    create function public.pg_advisory_xact_lock(key text) returns void language plpgsql as $f$
    begin
      ${payload('pg_advisory_xact_lock')}
    end $f$;`;
}

describe('platform connections to a database whose customer planted functions in public', function () {
  let plane: ScratchDataPlane;
  /** Superuser connections to the maintenance database, and to each database under test. */
  let admin: pg.Client;
  const superusers: pg.Client[] = [];
  const credentials: { database: pg.Client; physicalName: string; roleName: string }[] = [];


  /**
   * A new database whose customer, through an unscoped credential, planted the trojans; with a
   * superuser connection to it on the default search path, and credentials made through it.
   */
  async function plantedDatabase() {
    const db = await plane.newDatabase('search_path');
    const database = await connect(db.url);
    superusers.push(database);
    async function createCredential(tenantId: string | null): Promise<{ roleName: string; url: string }> {
      const roleName = credentialRoleName();
      const password = randomBytes(18).toString('base64url');
      await createCredentialRole(admin, database, { physicalName: db.name, roleName, password, tenantId });
      credentials.push({ database, physicalName: db.name, roleName });
      return { roleName, url: credentialUrl(plane.server.adminUrl, db.name, { role: roleName, password }) };
    }
    const customer = await createCredential(null);
    await withClient(customer.url, (client) => client.query(trojans(customer.roleName)));
    return { db, database, roleName: customer.roleName, createCredential };
  }

  /** Who ran a trojan, and whether the credential became a superuser. */
  async function aftermath(db: ScratchDatabase, roleName: string): Promise<{ calls: unknown[]; superuser: boolean }> {
    const calls = await query(db.url, 'select name, run_as from public.trojan_calls order by name');
    const [{ rolsuper }] = await query(plane.server.adminUrl, 'select rolsuper from pg_roles where rolname = $1', [roleName]);
    return { calls, superuser: rolsuper };
  }

  before(async function () {
    plane = await startScratchDataPlane();
    admin = await connect(plane.server.adminUrl);
  });

  after(async function () {
    for (const { database, physicalName, roleName } of credentials) await dropCredentialRole(admin, database, { physicalName, roleName });
    await Promise.all(superusers.map((client) => client.end()));
    // Roles outlive their database, and plane.close() stops the server: drop both before.
    for (const name of new Set(credentials.map((credential) => credential.physicalName))) {
      await dropScratchDatabase(plane.server, name);
      await dropDatabaseRoles(admin, name);
    }
    await admin?.end();
    await plane?.close();
  });

  it('the trap is real: a superuser session on the default search path runs them for untyped parameters', async function () {
    const { db, database, roleName } = await plantedDatabase();
    const [{ user }] = await query(db.url, 'select current_user as user');
    await database.query('select make_interval(secs => $1)', [600]);
    await database.query('select pg_advisory_xact_lock($1)', [1]);
    expect(await aftermath(db, roleName)).to.deep.equal({
      calls: [
        { name: 'make_interval', run_as: user },
        { name: 'pg_advisory_xact_lock', run_as: user },
      ],
      superuser: true,
    });
    await admin.query(`alter role ${admin.escapeIdentifier(roleName)} nosuperuser`);
  });

  it('signs a user in and serves their reads without running any of them', async function () {
    const { db, roleName } = await plantedDatabase();
    const { repos } = db;
    const tenant = await repos.tenants.create({ name: 'Acme' });
    const user = await repos.users.create({ email: 'alice@acme.test', passwordHash: 'hash' }, tenant.id);

    expect(await repos.users.findCredentials('ALICE@acme.test')).to.deep.equal({ user, passwordHash: 'hash' });
    const session = await repos.sessions.create(user.id, 600);
    const [row] = await query(db.url, 'select extract(epoch from expires - created)::int as ttl_seconds from auth.sessions');
    expect(row).to.deep.equal({ ttl_seconds: 600 });
    expect(await repos.sessions.findByToken(session.token)).to.deep.equal({ id: session.id, userId: user.id, expires: session.expires });
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(true);
    expect(await repos.tenants.listForUser(user.id, session.id)).to.deep.equal({ sessionValid: true, tenants: [tenant] });
    expect(await repos.users.access(user.id, session.id, tenant.id)).to.deep.equal({ sessionValid: true, member: true });
    expect(await repos.tenants.list()).to.deep.equal([tenant]);
    expect(await repos.users.listMembers(tenant.id)).to.deep.equal([user]);
    await repos.sessions.revoke(session.id);

    expect(await aftermath(db, roleName)).to.deep.equal({ calls: [], superuser: false });
  });

  it('creates and drops credentials, and re-runs the installer, without running any of them', async function () {
    const { db, database, roleName, createCredential } = await plantedDatabase();
    const tenant = await db.repos.tenants.create({ name: 'Acme' });
    for (const credential of [await createCredential(null), await createCredential(tenant.id)]) {
      await dropCredentialRole(admin, database, { physicalName: db.name, roleName: credential.roleName });
    }
    await withClient(db.url, installBuiltInSchema);

    expect(await aftermath(db, roleName)).to.deep.equal({ calls: [], superuser: false });
  });
});
