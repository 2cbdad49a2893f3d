import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
// Integration test: the driver runs against a real PostgreSQL, which @platform/testing starts.
import { query, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { PgClusterDriver } from './cluster-driver.js';

describe('cluster driver: login roles', function () {
  let postgres: TestPostgres;
  let driver: PgClusterDriver;
  const created: string[] = [];

  /** A physical name of this test only; dropped after it. */
  function physicalName(prefix = 't'): string {
    const name = `${prefix}_${randomBytes(6).toString('hex')}`;
    created.push(name);
    return name;
  }

  const urlOf = (name: string) => databaseUrl(postgres.adminUrl, name);

  before(async function () {
    postgres = await startTestPostgres();
  });

  beforeEach(function () {
    driver = new PgClusterDriver(postgres.adminUrl);
  });

  afterEach(async function () {
    // Through the driver: its drop takes the databases' roles along.
    for (const name of created.splice(0)) await driver.dropDatabase(name);
    await driver.close();
  });

  after(async function () {
    await postgres?.stop();
  });

  const newPassword = () => randomBytes(32).toString('base64url');

  /** A database with its built-in schema, as the provisioner leaves it READY. */
  async function readyDatabase(): Promise<string> {
    const name = physicalName('cred');
    await driver.createDatabase(name);
    await driver.installBuiltInSchema(name);
    return name;
  }

  function loginUrl(name: string, role: string, password: string): string {
    const url = new URL(driver.connectionUrl(name));
    url.username = role;
    url.password = password;
    return url.href;
  }

  async function existingRoles(names: string[]): Promise<string[]> {
    const rows = await query<{ rolname: string }>(postgres.adminUrl, 'select rolname from pg_roles where rolname = any($1) order by rolname', [names]);
    return rows.map((row) => row.rolname);
  }

  it('gives a database built, and a credential created, the configured limits; an upgrade brings existing ones to new ones', async function () {
    const limits = { session: { tempFileLimitKiB: 4096, lockTimeoutMs: 2_000, idleInTransactionTimeoutMs: 60_000 }, maxConnections: 40 };
    await driver.close();
    driver = new PgClusterDriver(postgres.adminUrl, postgres.adminUrl, limits);
    const name = await readyDatabase();
    const role = await driver.createLoginRole(name, { password: newPassword(), tenantId: null });
    const settingsOf = async () => ({
      connections: (await query<{ n: number }>(postgres.adminUrl, 'select datconnlimit as n from pg_database where datname = $1', [name]))[0].n,
      role: (await query<{ setconfig: string[] }>(postgres.adminUrl, 'select setconfig from pg_db_role_setting where setrole = $1::regrole and setdatabase = 0', [role]))[0].setconfig,
    });
    expect(await settingsOf()).to.deep.equal({
      connections: 40,
      role: ['temp_file_limit=4096', 'lock_timeout=2000', 'idle_in_transaction_session_timeout=60000'],
    });
    await driver.close();
    driver = new PgClusterDriver(postgres.adminUrl, postgres.adminUrl, { ...limits, session: { ...limits.session, lockTimeoutMs: 9_000 }, maxConnections: 50 });
    await driver.upgradeBuiltInSchema(name);
    expect(await settingsOf()).to.deep.equal({
      connections: 50,
      role: ['temp_file_limit=4096', 'lock_timeout=9000', 'idle_in_transaction_session_timeout=60000'],
    });
  });

  it('createLoginRole makes a role that logs in with the password; dropLoginRole ends its sessions and drops it', async function () {
    const name = await readyDatabase();
    const password = newPassword();
    const role = await driver.createLoginRole(name, { password, tenantId: null });
    expect(role).to.match(/^cred_[a-z2-7]{20}$/);
    const client = new pg.Client({ connectionString: loginUrl(name, role, password) });
    client.on('error', () => {});
    await client.connect();
    expect((await client.query('select current_user as who')).rows).to.deep.equal([{ who: role }]);

    await driver.dropLoginRole(name, role);
    await rejection(client.query('select 1'));
    await client.end().catch(() => {});
    expect(await existingRoles([role])).to.deep.equal([]);
    await driver.dropLoginRole(name, role);
  });

  it('binds a role to a tenant of the database, and refuses a tenant it does not have', async function () {
    const name = await readyDatabase();
    const [{ id: tenantId }] = await query<{ id: string }>(urlOf(name), `insert into public.tenants (name) values ('t') returning id`);
    const role = await driver.createLoginRole(name, { password: newPassword(), tenantId });
    expect(await query(urlOf(name), 'select role_name, tenant_id from platform.credential_tenants')).to.deep.equal([{ role_name: role, tenant_id: tenantId }]);
    const error = await rejection(driver.createLoginRole(name, { password: newPassword(), tenantId: randomUUID() }));
    expect(error).to.include({ code: 'tenant_not_found' });
    const members = await query(postgres.adminUrl, `select 1 from pg_auth_members m join pg_roles r on r.oid = m.roleid where r.rolname = $1`, [`${name}_scoped`]);
    expect(members).to.have.length(1);
  });

  it('dropDatabase drops the database’s credential roles and its own roles too; again is fine', async function () {
    const name = await readyDatabase();
    const [{ id: tenantId }] = await query<{ id: string }>(urlOf(name), `insert into public.tenants (name) values ('t') returning id`);
    const roles = [await driver.createLoginRole(name, { password: newPassword(), tenantId: null }), await driver.createLoginRole(name, { password: newPassword(), tenantId })];
    const own = ['owner', 'tenant', 'admin', 'scoped'].map((kind) => `${name}_${kind}`);
    expect(await existingRoles([...roles, ...own])).to.deep.equal([...roles, ...own].sort());
    await driver.dropDatabase(name);
    expect(await existingRoles([...roles, ...own])).to.deep.equal([]);
    await driver.dropDatabase(name);
  });
});
