import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { rejection } from '@platform/testing';
import { RawConnection, startupPacket } from './support/raw-client.js';
import { connectVerified, psql, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

type PgError = Error & { code?: string };

describe('gateway: tenant isolation through the gateway', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let tenants: { a: string; b: string };
  /** The database's physical name, which its roles are named after. */
  let physical: string;
  let unscoped: TestCredential;
  let scopedA: TestCredential;

  /** What a session sees of each tenant-aware table: the tenants of its rows, and the names in them. */
  async function view(client: pg.Client) {
    const orders = await client.query<{ item: string }>('select item from orders order by item');
    const tenantRows = await client.query<{ id: string }>('select id from tenants order by id');
    const users = await client.query<{ email: string }>('select email from users.users order by email');
    return { orders: orders.rows.map((row) => row.item), tenants: tenantRows.rows.map((row) => row.id), users: users.rows.map((row) => row.email) };
  }

  const seesA = () => ({ orders: ['a-1', 'a-2'], tenants: [tenants.a], users: ['a1@example.test', 'a2@example.test'] });
  const seesB = () => ({ orders: ['b-1'], tenants: [tenants.b], users: ['b1@example.test'] });

  async function expectRefused(client: pg.Client, sql: string, code: string, message: string) {
    const error = (await rejection(client.query(sql))) as PgError;
    expect({ code: error.code, message: error.message }, sql).to.deep.equal({ code, message });
  }

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform();
    db = await p.newDatabase();
    tenants = { a: await db.newTenant('Tenant A'), b: await db.newTenant('Tenant B') };
    await db.newUser(tenants.a, 'a1@example.test');
    await db.newUser(tenants.a, 'a2@example.test');
    await db.newUser(tenants.b, 'b1@example.test');
    unscoped = await db.newCredential();
    scopedA = await db.newCredential(tenants.a);
    const client = await connectVerified(p, unscoped);
    try {
      physical = (await client.query('select current_database() as name')).rows[0].name;
      // A customer's table with a tenant_id column: the platform makes it tenant-aware as it is created.
      await client.query('create table orders (id serial primary key, tenant_id uuid not null, item text not null)');
      for (const [tenant, items] of [[tenants.a, ['a-1', 'a-2']], [tenants.b, ['b-1']]] as const) {
        await client.query('begin');
        await client.query("select set_config('platform.tenant_id', $1, true)", [tenant]);
        for (const item of items) await client.query('insert into orders (tenant_id, item) values ($1, $2)', [tenant, item]);
        await client.query('commit');
      }
    } finally {
      await client.end();
    }
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  it('made the customer table tenant-aware: without a tenant, an unscoped credential sees every tenant’s rows', async function () {
    const client = await connectVerified(p, unscoped);
    try {
      expect(await view(client)).to.deep.equal({
        orders: ['a-1', 'a-2', 'b-1'],
        tenants: [tenants.a, tenants.b].sort(),
        users: ['a1@example.test', 'a2@example.test', 'b1@example.test'],
      });
      const secured = await client.query("select relrowsecurity and relforcerowsecurity as secured from pg_class where oid = 'orders'::regclass");
      expect(secured.rows).to.deep.equal([{ secured: true }]);
    } finally {
      await client.end();
    }
  });

  it('shows a tenant-scoped credential its tenant’s rows only, in a customer table, tenants and users.users', async function () {
    const scopedB = await db.newCredential(tenants.b);
    const [a, b] = [await connectVerified(p, scopedA), await connectVerified(p, scopedB)];
    try {
      expect(await view(a)).to.deep.equal(seesA());
      expect(await view(b)).to.deep.equal(seesB());
      // It writes its own tenant's rows and no other's.
      await a.query('insert into orders (tenant_id, item) values ($1, $2)', [tenants.a, 'a-3']);
      const error = (await rejection(a.query('insert into orders (tenant_id, item) values ($1, $2)', [tenants.b, 'b-from-a']))) as PgError;
      expect({ code: error.code, message: error.message }).to.deep.equal({ code: '42501', message: 'new row violates row-level security policy for table "orders"' });
      expect((await b.query('select item from orders order by item')).rows).to.deep.equal([{ item: 'b-1' }]);
      await a.query("delete from orders where item = 'a-3'");
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('keeps a scoped credential to its tenant whatever the session sets, resets or switches to', async function () {
    const client = await connectVerified(p, scopedA);
    try {
      await client.query(`set platform.tenant_id = '${tenants.b}'`);
      expect(await view(client), 'SET').to.deep.equal(seesA());
      await client.query('reset platform.tenant_id');
      expect(await view(client), 'RESET').to.deep.equal(seesA());
      await client.query('select set_config($1, $2, false)', ['platform.tenant_id', tenants.b]);
      expect(await view(client), 'set_config').to.deep.equal(seesA());
      await client.query(`set nile.tenant_id = '${tenants.b}'`);
      expect(await view(client), 'nile.tenant_id').to.deep.equal(seesA());
      // A new transaction, with the setting local to it.
      await client.query('begin');
      await client.query('select set_config($1, $2, true)', ['platform.tenant_id', tenants.b]);
      expect(await view(client), 'SET LOCAL').to.deep.equal(seesA());
      await client.query('commit');
      for (const role of ['owner', 'admin', 'tenant', 'scoped'].map((kind) => `${physical}_${kind}`)) {
        await expectRefused(client, `set role ${role}`, '42501', `permission denied to set role "${role}"`);
      }
      await expectRefused(client, `set session authorization ${unscoped.id}`, '42501', `permission denied to set session authorization "${unscoped.id}"`);
      expect(await view(client), 'after all').to.deep.equal(seesA());
    } finally {
      await client.end();
    }
  });

  it('ignores another tenant in a scoped credential’s startup options, under either name', async function () {
    for (const options of [`-c platform.tenant_id=${tenants.b}`, `-c nile.tenant_id=${tenants.b}`, `--platform.tenant_id=${tenants.b}`, '-c nile.tenant_id=', '-c platform.tenant_id=']) {
      const client = await connectVerified(p, scopedA, { options });
      try {
        expect(await view(client), options).to.deep.equal(seesA());
        // The gateway did not pass the other tenant on.
        expect((await client.query("select coalesce(current_setting('platform.tenant_id', true), '') as setting")).rows, options).to.deep.equal([{ setting: '' }]);
      } finally {
        await client.end();
      }
    }
    const viaPsql = await psql(p, scopedA, ["select string_agg(item, ',' order by item) from orders"], { options: `-c nile.tenant_id=${tenants.b}` });
    expect([viaPsql.stderr, viaPsql.stdout]).to.deep.equal(['', 'a-1,a-2\n']);
    // Roles in the options are PostgreSQL's to refuse.
    for (const [options, message] of [
      [`-c role=${physical}_admin`, `permission denied to set role "${physical}_admin"`],
      [`-c session_authorization=${unscoped.id}`, `permission denied to set session authorization "${unscoped.id}"`],
    ]) {
      const error = (await rejection(connectVerified(p, scopedA, { options }))) as PgError;
      expect({ code: error.code, message: error.message }, options).to.deep.equal({ code: '42501', message });
    }
  });

  it('takes a tenant given as a startup parameter of its own as it takes one in the options', async function () {
    const items = "select (select string_agg(item, ',' order by item) from orders)";
    const asUnscoped = await RawConnection.openTls(p.gatewayPort, p.ca);
    await asUnscoped.login(unscoped.id, db.name, unscoped.password, { 'nile.tenant_id': tenants.b });
    expect(await asUnscoped.query(`${items}, current_setting('nile.tenant_id')`)).to.deep.equal([['b-1', tenants.b]]);
    asUnscoped.end();
    const asScoped = await RawConnection.openTls(p.gatewayPort, p.ca);
    await asScoped.login(scopedA.id, db.name, scopedA.password, { 'platform.tenant_id': tenants.b });
    expect(await asScoped.query(`${items}, coalesce(current_setting('platform.tenant_id', true), '')`)).to.deep.equal([['a-1,a-2', '']]);
    asScoped.end();
    const invalid = await RawConnection.openTls(p.gatewayPort, p.ca);
    invalid.write(startupPacket({ user: unscoped.id, database: db.name, 'platform.tenant_id': 'nope' }));
    const fields = await invalid.fatalError();
    expect([fields.C, fields.M]).to.deep.equal(['22023', 'invalid value for parameter "platform.tenant_id": "nope"']);
  });

  it('binds an unscoped credential to the tenant of its startup options, under either name', async function () {
    const a = await connectVerified(p, unscoped, { options: `-c platform.tenant_id=${tenants.a}` });
    const b = await connectVerified(p, unscoped, { options: `-c nile.tenant_id=${tenants.b.toUpperCase()}` });
    try {
      expect(await view(a)).to.deep.equal(seesA());
      expect(await view(b)).to.deep.equal(seesB());
      expect((await a.query('show platform.tenant_id')).rows).to.deep.equal([{ 'platform.tenant_id': tenants.a }]);
      // Passed on under the name the client gave it: a later SET of that name replaces it.
      expect((await b.query('show nile.tenant_id')).rows).to.deep.equal([{ 'nile.tenant_id': tenants.b }]);
      expect((await b.query("select coalesce(current_setting('platform.tenant_id', true), '') as other")).rows).to.deep.equal([{ other: '' }]);
      await b.query(`set nile.tenant_id = '${tenants.a}'`);
      expect(await view(b)).to.deep.equal(seesA());
      await b.query('reset nile.tenant_id');
      expect(await view(b), 'RESET goes back to the startup value').to.deep.equal(seesB());
    } finally {
      await a.end();
      await b.end();
    }
    // Other options go on to the backend as they came.
    const viaPsql = await psql(p, unscoped, ["select string_agg(item, ',' order by item) || ' ' || current_setting('custom.note') from orders"], {
      options: `-c custom.note=tenant\\ test -c platform.tenant_id=${tenants.a}`,
    });
    expect([viaPsql.stderr, viaPsql.stdout]).to.deep.equal(['', 'a-1,a-2 tenant test\n']);
  });

  it('refuses a tenant id in the options that is not a UUID with 22023', async function () {
    for (const [name, value] of [
      ['platform.tenant_id', 'not-a-uuid'],
      ['nile.tenant_id', `${tenants.a}0`],
    ]) {
      const error = (await rejection(connectVerified(p, unscoped, { options: `-c ${name}=${value}` }))) as PgError & { hint?: string };
      expect({ code: error.code, message: error.message, hint: error.hint }).to.deep.equal({
        code: '22023',
        message: `invalid value for parameter "${name}": "${value}"`,
        hint: 'A tenant id is a UUID.',
      });
    }
  });

  it('refuses a tenant that is not a live tenant of the database with 22023, and adds no metrics series for it', async function () {
    this.timeout(60_000);
    const seriesOf = async () => [...(await p.metrics()).keys()].filter((name) => name.startsWith('gateway_'));
    const before = await seriesOf();
    for (let i = 0; i < 50; i++) {
      const tenantId = randomUUID();
      const setting = i % 2 === 0 ? 'platform.tenant_id' : 'nile.tenant_id';
      const options = `-c ${setting}=${tenantId}`;
      const error = (await rejection(connectVerified(p, unscoped, { options }))) as PgError & { detail?: string; hint?: string };
      expect({ code: error.code, message: error.message, detail: error.detail, hint: error.hint }).to.deep.equal({
        code: '22023',
        message: `tenant "${tenantId}" does not exist`,
        detail: `${setting} names no live tenant of database "${db.name}".`,
        hint: 'Create the tenant first (INSERT INTO tenants, or POST .../tenants), or connect without a tenant.',
      });
    }
    expect(await seriesOf()).to.deep.equal(before);
    // The same through psql, and a real tenant still binds the session.
    const refused = await psql(p, unscoped, ['select 1'], { options: `-c platform.tenant_id=${randomUUID()}` });
    expect(refused.stderr).to.match(/FATAL: {2}tenant "[0-9a-f-]{36}" does not exist/);
    const real = await psql(p, unscoped, ["select current_setting('platform.tenant_id')"], { options: `-c platform.tenant_id=${tenants.b}` });
    expect([real.stderr, real.stdout]).to.deep.equal(['', `${tenants.b}\n`]);
  });

  it('refuses a tenant deleted since', async function () {
    const doomed = await db.newTenant('Doomed');
    const bound = await connectVerified(p, unscoped, { options: `-c platform.tenant_id=${doomed}` });
    await bound.end();
    const deleted = await p.api.request('DELETE', `${db.D}/tenants/${doomed}`, { token: db.token });
    expect(deleted.status).to.be.oneOf([200, 204]);
    const error = (await rejection(connectVerified(p, unscoped, { options: `-c platform.tenant_id=${doomed}` }))) as PgError;
    expect([error.code, error.message]).to.deep.equal(['22023', `tenant "${doomed}" does not exist`]);
  });

  it('lets no credential read the auth or platform schemas (42501), not even through the admin role', async function () {
    const tables = ['auth.credentials', 'auth.sessions', 'auth.one_time_tokens', 'platform.credential_tenants', 'platform.schema_steps'];
    const scoped = await connectVerified(p, scopedA);
    const owner = await connectVerified(p, unscoped, { options: `-c platform.tenant_id=${tenants.a}` });
    const admin = await connectVerified(p, unscoped);
    try {
      await admin.query(`set role ${physical}_admin`);
      for (const client of [scoped, owner, admin]) {
        for (const table of tables) await expectRefused(client, `select * from ${table}`, '42501', `permission denied for schema ${table.split('.')[0]}`);
      }
      // The admin role bypasses row-level security: that is what it is for, and why only unscoped credentials reach it.
      expect((await admin.query('select count(*)::int as n from orders')).rows).to.deep.equal([{ n: 3 }]);
    } finally {
      await Promise.all([scoped.end(), owner.end(), admin.end()]);
    }
  });
});
