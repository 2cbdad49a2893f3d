import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
// Integration test: settings, policies and triggers are PostgreSQL's, so it runs against a real server.
import { createScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName } from './credential-roles.js';
import { databaseRoleNames, type DatabaseRoles } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, dropCredentialDatabase, firstColumn } from './scratch-data-plane.test.js';

type PgError = Error & { code?: string; detail?: string; hint?: string };

describe('tenant context over SQL for unscoped credentials (built-in schema step 12)', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let roles: DatabaseRoles;
  let tenants: { a: string; b: string };
  let users: { alice: string; bob: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];
  const values = firstColumn;

  before(async function () {
    postgres = await startTestPostgres();
    const scratch = await createScratchDatabase(postgres, 'context');
    name = scratch.name;
    roles = databaseRoleNames(name);
    [admin, database] = [await connect(postgres.adminUrl), await connect(scratch.url)];
    await installBuiltInSchema(database);
    const [a, b] = await values(database, `insert into tenants (name) values ('A'), ('B') returning id`);
    tenants = { a, b };
    const [alice, bob] = await values(database, `insert into users.users (email) values ('alice@a.test'), ('bob@b.test') returning id`);
    users = { alice, bob };
    await database.query('insert into users.tenant_users (tenant_id, user_id) values ($1, $2), ($3, $4)', [a, alice, b, bob]);
  });

  afterEach(async function () {
    await Promise.all(sessions.splice(0).map((session) => session.end().catch(() => {})));
  });

  after(async function () {
    await dropCredentialDatabase({ postgres, admin, database, name, credentials });
  });

  async function loginAs(tenantId: string | null): Promise<pg.Client> {
    const role = credentialRoleName();
    const password = randomBytes(18).toString('base64url');
    await createCredentialRole(admin, database, { physicalName: name, roleName: role, password, tenantId });
    credentials.push(role);
    const session = await connect(credentialUrl(postgres.adminUrl, name, { role, password }));
    sessions.push(session);
    return session;
  }

  /** A table an unscoped credential creates, with rows of both tenants (written by the superuser). */
  async function todos(owner: pg.Client, tenantType = 'uuid'): Promise<string> {
    const table = `todos_${randomBytes(4).toString('hex')}`;
    await owner.query(`create table ${table} (id serial primary key, tenant_id ${tenantType}, title text not null)`);
    await database.query(`insert into ${table} (tenant_id, title) values ($1, 'a1'), ($2, 'b1')`, [tenants.a, tenants.b]);
    return table;
  }

  async function titles(client: pg.Client, table: string): Promise<string[]> {
    return values(client, `select title from ${table} order by title`);
  }

  async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string; detail?: string; hint?: string }> {
    const error = (await rejection(promise)) as PgError;
    return { code: error.code, message: error.message, detail: error.detail, hint: error.hint };
  }

  it('shows an unscoped credential without a context every tenant’s rows, and lets it write rows for any tenant', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    expect(await titles(owner, table)).to.deep.equal(['a1', 'b1']);
    // One statement, rows of both tenants and one of none (as the command line tool's copy writes them).
    await owner.query(`insert into ${table} (tenant_id, title) values ($1, 'a2'), ($2, 'b2'), (null, 'none')`, [tenants.a, tenants.b]);
    expect((await owner.query(`update ${table} set title = title || '!' where title in ('a2', 'b2')`)).rowCount).to.equal(2);
    expect(await titles(owner, table)).to.deep.equal(['a1', 'a2!', 'b1', 'b2!', 'none']);
    expect(await values(owner, 'select name from tenants order by name')).to.deep.equal(['A', 'B']);
    expect(await values(owner, 'select email from users.users order by email')).to.deep.equal(['alice@a.test', 'bob@b.test']);
    expect((await owner.query(`delete from ${table} where title in ('a2!', 'b2!', 'none')`)).rowCount).to.equal(3);
  });

  it('narrows to one tenant under either name, however it is set, and widens again on RESET', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    const onlyA = ['a1'];
    const every = ['a1', 'b1'];
    for (const name of ['nile.tenant_id', 'platform.tenant_id']) {
      await owner.query(`set ${name} = '${tenants.a}'`);
      expect(await titles(owner, table), `SET ${name}`).to.deep.equal(onlyA);
      expect(await values(owner, 'select name from tenants'), `SET ${name}`).to.deep.equal(['A']);
      expect(await values(owner, 'select email from users.users'), `SET ${name}`).to.deep.equal(['alice@a.test']);
      await owner.query(`reset ${name}`);
      expect(await titles(owner, table), `RESET ${name}`).to.deep.equal(every);

      await owner.query('select set_config($1, $2, false)', [name, tenants.a.toUpperCase()]);
      expect(await titles(owner, table), `set_config ${name}`).to.deep.equal(onlyA);
      await owner.query(`set ${name} = ''`);
      expect(await titles(owner, table), `empty ${name}`).to.deep.equal(every);

      await owner.query('begin');
      await owner.query(`set local ${name} = '${tenants.a}'`);
      expect(await titles(owner, table), `SET LOCAL ${name}`).to.deep.equal(onlyA);
      await owner.query('commit');
      await owner.query('begin');
      await owner.query('select set_config($1, $2, true)', [name, tenants.a]);
      expect(await titles(owner, table), `set_config local ${name}`).to.deep.equal(onlyA);
      await owner.query('commit');
      expect(await titles(owner, table), `after the transaction, ${name}`).to.deep.equal(every);
    }
    // Both names on one tenant agree.
    await owner.query(`set nile.tenant_id = '${tenants.b}'; set platform.tenant_id = '${tenants.b.toUpperCase()}'`);
    expect(await titles(owner, table)).to.deep.equal(['b1']);
  });

  it('refuses a context it cannot honour, in words that name the setting', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    const reads = [`select title from ${table}`, 'select name from tenants'];
    const expectRefused = async (setup: string, expected: { code: string; message: string; detail?: string; hint?: string }) => {
      await owner.query(setup);
      for (const sql of reads) expect(await refusal(owner.query(sql)), `${setup}; ${sql}`).to.deep.equal({ detail: undefined, hint: undefined, ...expected });
      await owner.query('reset all');
    };
    await expectRefused("set nile.tenant_id = 'not-a-uuid'", {
      code: '22023',
      message: 'invalid value for parameter "nile.tenant_id": "not-a-uuid"',
      hint: 'A tenant id is a UUID.',
    });
    await expectRefused(`set platform.tenant_id = '${tenants.a}0'`, {
      code: '22023',
      message: `invalid value for parameter "platform.tenant_id": "${tenants.a}0"`,
      hint: 'A tenant id is a UUID.',
    });
    await expectRefused(`set nile.tenant_id = '${tenants.a}'; set platform.tenant_id = '${tenants.b}'`, {
      code: '22023',
      message: `nile.tenant_id ("${tenants.a}") and platform.tenant_id ("${tenants.b}") name different tenants`,
      detail: 'Both settings name the tenant context; when both are set they must agree.',
      hint: 'Set one of them and RESET the other.',
    });
    const unknown = randomUUID();
    await expectRefused(`set nile.tenant_id = '${unknown}'`, {
      code: '22023',
      message: `tenant "${unknown}" does not exist`,
      detail: 'nile.tenant_id names no live tenant of this database.',
      hint: 'Create the tenant first (INSERT INTO tenants), or RESET the setting to work across tenants.',
    });
    // A tenant deleted softly (as the API deletes) is no context either.
    const [gone] = await values(database, `insert into tenants (name, deleted) values ('gone', now()) returning id`);
    await expectRefused(`set platform.tenant_id = '${gone}'`, {
      code: '22023',
      message: `tenant "${gone}" does not exist`,
      detail: 'platform.tenant_id names no live tenant of this database.',
      hint: 'Create the tenant first (INSERT INTO tenants), or RESET the setting to work across tenants.',
    });
    expect(await titles(owner, table)).to.deep.equal(['a1', 'b1']);
  });

  it('gives a row written without tenant_id the context’s tenant, and refuses another tenant’s row naming the setting', async function () {
    const owner = await loginAs(null);
    for (const type of ['uuid', 'text']) {
      const table = await todos(owner, type);
      await owner.query(`set nile.tenant_id = '${tenants.a}'`);
      await owner.query(`insert into ${table} (title) values ('a2')`);
      expect(await values(owner, `select tenant_id::text from ${table} where title = 'a2'`), type).to.deep.equal([tenants.a]);
      const expected = (schema: string) => ({
        code: '42501',
        message: `row of tenant "${tenants.b}" is outside the tenant context "${tenants.a}" (table ${schema}.${table})`,
        detail: 'nile.tenant_id sets the tenant context: rows of other tenants cannot be written in it.',
        hint: 'Write the row in its own tenant\'s context, or RESET nile.tenant_id (and platform.tenant_id) to write rows of any tenant.',
      });
      expect(await refusal(owner.query(`insert into ${table} (tenant_id, title) values ($1, 'b2')`, [tenants.b])), type).to.deep.equal(expected('public'));
      expect(await refusal(owner.query(`update ${table} set tenant_id = $1 where title = 'a2'`, [tenants.b])), type).to.deep.equal(expected('public'));
      // Another tenant's rows are out of reach for updates and deletes: none match.
      expect((await owner.query(`update ${table} set title = 'x' where title = 'b1'`)).rowCount, type).to.equal(0);
      expect((await owner.query(`delete from ${table} where title = 'b1'`)).rowCount, type).to.equal(0);
      await owner.query('reset nile.tenant_id');
      expect(await titles(owner, table), type).to.deep.equal(['a1', 'a2', 'b1']);
    }
  });

  it('refuses a tenant_id of a type the customer defined, whose cast would run inside the superuser’s row guard', async function () {
    const owner = await loginAs(null);
    const suffix = randomBytes(4).toString('hex');
    // A trap: a composite type whose cast to text grabs superuser when it runs as one.
    await owner.query(`create type tenant_ref_${suffix} as (id text)`);
    await owner.query(`
      create function trap_${suffix}(ref tenant_ref_${suffix}) returns text language plpgsql as $f$
      begin
        if (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
          execute format('alter role %I superuser', session_user);
        end if;
        return ref.id;
      end $f$`);
    await owner.query(`create cast (tenant_ref_${suffix} as text) with function trap_${suffix}(tenant_ref_${suffix})`);
    const refused = (table: string) => ({ code: '42501', message: `column tenant_id of public.${table} must be uuid, text or varchar with a deterministic collation` });
    const created = await refusal(owner.query(`create table trapped_${suffix} (id serial primary key, tenant_id tenant_ref_${suffix}, title text)`));
    expect({ code: created.code, message: created.message }).to.deep.equal(refused(`trapped_${suffix}`));
    await owner.query(`create table retyped_${suffix} (id serial primary key, tenant_id text, title text)`);
    const retyped = await refusal(owner.query(`alter table retyped_${suffix} alter column tenant_id type tenant_ref_${suffix} using row(tenant_id)`));
    // PostgreSQL refuses it first: the policies use the column.
    expect({ code: retyped.code, message: retyped.message }).to.deep.equal({ code: '0A000', message: 'cannot alter type of a column used in a policy definition' });
    expect(await values(owner, `select atttypid::regtype::text from pg_attribute where attrelid = 'retyped_${suffix}'::regclass and attname = 'tenant_id'`)).to.deep.equal(['text']);
    await owner.query(`set nile.tenant_id = '${tenants.a}'`);
    await owner.query(`insert into retyped_${suffix} (tenant_id, title) values ($1, 'a1')`, [tenants.a]);
    await owner.query('reset nile.tenant_id');
    expect(await values(admin, `select rolsuper::text from pg_roles where rolname = '${credentials[credentials.length - 1]}'`)).to.deep.equal(['false']);
  });

  it('holds nile.user_id to a member of the context’s tenant', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    await owner.query(`set nile.tenant_id = '${tenants.a}'; set nile.user_id = '${users.alice}'`);
    expect(await titles(owner, table)).to.deep.equal(['a1']);
    await owner.query(`set nile.user_id = '${users.bob}'`);
    const notMember = {
      code: '42501',
      message: `user "${users.bob}" is not a member of tenant "${tenants.a}"`,
      detail: 'nile.user_id names the user of the session; nile.tenant_id names its tenant.',
      hint: 'Add the user to the tenant (users.tenant_users), or RESET nile.user_id.',
    };
    expect(await refusal(owner.query(`select title from ${table}`))).to.deep.equal(notMember);
    await owner.query(`set nile.user_id = 'bob'`);
    expect(await refusal(owner.query(`select title from ${table}`))).to.deep.equal({
      code: '22023',
      message: 'invalid value for parameter "nile.user_id": "bob"',
      detail: undefined,
      hint: 'A user id is a UUID.',
    });
    // Without a tenant context the user context narrows nothing.
    await owner.query(`reset nile.tenant_id; set nile.user_id = '${users.bob}'`);
    expect(await titles(owner, table)).to.deep.equal(['a1', 'b1']);
    // A member who leaves the tenant, or is deleted, is a member no more.
    await owner.query(`set nile.tenant_id = '${tenants.b}'`);
    expect(await titles(owner, table)).to.deep.equal(['b1']);
    await database.query('update users.users set deleted = now() where id = $1', [users.bob]);
    try {
      expect((await refusal(owner.query(`select title from ${table}`))).code).to.equal('42501');
    } finally {
      await database.query('update users.users set deleted = null where id = $1', [users.bob]);
    }
  });

  it('takes tenants over SQL: insert with or without id, rename, hard delete with what depends on it', async function () {
    const owner = await loginAs(null);
    const id = randomUUID();
    const created = await owner.query(`insert into tenants (id, name) values ($1, 'C') returning *`, [id]);
    expect(Object.keys(created.rows[0])).to.deep.equal(['id', 'name', 'created', 'updated', 'deleted']);
    expect(created.rows[0]).to.include({ id, name: 'C', deleted: null });
    const [generated] = await values(owner, `insert into tenants (name) values ('D') returning id`);
    expect(generated).to.match(/^[0-9a-f-]{36}$/);
    const renamed = await owner.query(`update tenants set name = 'C2' where id = $1 returning name, updated > created as touched`, [id]);
    expect(renamed.rows).to.deep.equal([{ name: 'C2', touched: true }]);
    expect(await refusal(owner.query(`update tenants set created = now() where id = $1`, [id]))).to.deep.include({ code: '42501', message: 'permission denied for table tenants' });

    // A member, a scoped credential and a customer row of the tenant; then the tenant goes.
    await owner.query('insert into users.tenant_users (tenant_id, user_id, roles) values ($1, $2, $3)', [id, users.alice, ['admin']]);
    const scoped = await loginAs(id);
    const table = await todos(owner);
    await owner.query(`insert into ${table} (tenant_id, title) values ($1, 'c1')`, [id]);
    expect(await titles(scoped, table)).to.deep.equal(['c1']);
    expect((await owner.query('delete from tenants where id = $1', [id])).rowCount).to.equal(1);
    expect(await values(database, 'select count(*)::int from users.tenant_users where tenant_id = $1', [id])).to.deep.equal([0]);
    expect(await values(database, 'select count(*)::int from platform.credential_tenants where tenant_id = $1', [id])).to.deep.equal([0]);
    // Its scoped credential sees nothing from then on; the customer's row stays (no foreign key cascades it).
    expect(await titles(scoped, table)).to.deep.equal([]);
    expect(await values(scoped, 'select name from tenants')).to.deep.equal([]);
    expect(await titles(owner, table)).to.deep.equal(['a1', 'b1', 'c1']);
    await owner.query('delete from tenants where id = $1', [generated]);
  });

  it('shows in a context only its tenant among tenants, lets its name change, and refuses creating or deleting tenants', async function () {
    const owner = await loginAs(null);
    await owner.query(`set nile.tenant_id = '${tenants.b}'`);
    expect(await values(owner, 'select id from tenants')).to.deep.equal([tenants.b]);
    expect((await owner.query(`update tenants set name = 'B2'`)).rowCount).to.equal(1);
    expect((await owner.query(`update tenants set name = 'A2' where id = $1`, [tenants.a])).rowCount).to.equal(0);
    for (const [sql, operation] of [
      [`insert into tenants (name) values ('E')`, 'INSERT'],
      [`delete from tenants where id = '${tenants.b}'`, 'DELETE'],
    ]) {
      expect(await refusal(owner.query(sql)), sql).to.deep.equal({
        code: '42501',
        message: `${operation} on tenants is refused in a tenant context`,
        detail: 'nile.tenant_id sets the tenant context: in it, only that tenant is visible, and only its name may change.',
        hint: 'RESET nile.tenant_id (and platform.tenant_id) to create or delete tenants.',
      });
    }
    await owner.query(`update tenants set name = 'B'`);
    await owner.query('reset nile.tenant_id');
    expect(await values(owner, 'select name from tenants where id = any($1) order by name', [[tenants.a, tenants.b]])).to.deep.equal(['A', 'B']);
  });

  it('gives memberships the API family’s columns, the email following the user’s; users stay read-only and auth unreadable', async function () {
    const owner = await loginAs(null);
    const [carol] = await values(database, `insert into users.users (email) values ('carol@c.test') returning id`);
    await owner.query('insert into users.tenant_users (tenant_id, user_id) values ($1, $2)', [tenants.a, carol]);
    const row = async () =>
      (await owner.query('select email, roles, deleted, updated >= created as ordered from users.tenant_users where user_id = $1', [carol])).rows;
    expect(await row()).to.deep.equal([{ email: 'carol@c.test', roles: [], deleted: null, ordered: true }]);
    await database.query(`update users.users set email = 'carol@new.test' where id = $1`, [carol]);
    expect(await row()).to.deep.equal([{ email: 'carol@new.test', roles: [], deleted: null, ordered: true }]);
    await owner.query(`update users.tenant_users set roles = '{owner}' where user_id = $1`, [carol]);
    expect((await row())[0].roles).to.deep.equal(['owner']);
    expect(await refusal(owner.query(`update users.users set name = 'x' where id = $1`, [carol]))).to.deep.include({ code: '42501', message: 'permission denied for table users' });
    expect(await refusal(owner.query('select * from auth.credentials'))).to.deep.include({ code: '42501', message: 'permission denied for schema auth' });
    // In B's context, A's memberships are neither visible nor writable.
    await owner.query(`set nile.tenant_id = '${tenants.b}'`);
    expect((await owner.query('delete from users.tenant_users where user_id = $1', [carol])).rowCount).to.equal(0);
    await owner.query('reset nile.tenant_id');
    expect((await owner.query('delete from users.tenant_users where user_id = $1', [carol])).rowCount).to.equal(1);
  });

  it('refuses TRUNCATE in a context set by nile.tenant_id', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    await owner.query(`set nile.tenant_id = '${tenants.a}'`);
    expect((await refusal(owner.query(`truncate ${table}`))).message).to.equal(
      `TRUNCATE of tenant-aware table public.${table} is refused to a tenant-scoped credential or in a tenant context: it ignores row-level security and would empty every tenant`,
    );
  });

  it('guards each partition of a partitioned table, and attaching a secured table still works', async function () {
    const owner = await loginAs(null);
    const table = `parts_${randomBytes(4).toString('hex')}`;
    await owner.query(`create table ${table} (id int, tenant_id uuid not null, title text) partition by list (tenant_id)`);
    await owner.query(`create table ${table}_a partition of ${table} for values in ('${tenants.a}')`);
    await owner.query(`create table ${table}_b (id int, tenant_id uuid not null, title text)`);
    await owner.query(`alter table ${table} attach partition ${table}_b for values in ('${tenants.b}')`);
    await owner.query(`insert into ${table} values (1, $1, 'a1'), (2, $2, 'b1')`, [tenants.a, tenants.b]);
    await owner.query(`set nile.tenant_id = '${tenants.a}'`);
    expect(await titles(owner, table)).to.deep.equal(['a1']);
    expect((await refusal(owner.query(`insert into ${table} values (3, $1, 'b2')`, [tenants.b]))).message).to.equal(
      `row of tenant "${tenants.b}" is outside the tenant context "${tenants.a}" (table public.${table}_b)`,
    );
  });

  it('leaves tenant-scoped credentials and the API’s tenant role as they were', async function () {
    const owner = await loginAs(null);
    const table = await todos(owner);
    const scoped = await loginAs(tenants.a);
    await scoped.query(`set nile.tenant_id = '${tenants.b}'`);
    expect(await titles(scoped, table)).to.deep.equal(['a1']);
    // Row-level security's own words, and no tenant filled in for them.
    for (const sql of [`insert into ${table} (tenant_id, title) values ('${tenants.b}', 'b2')`, `insert into ${table} (title) values ('none')`]) {
      expect(await refusal(scoped.query(sql)), sql).to.deep.include({ code: '42501', message: `new row violates row-level security policy for table "${table}"` });
    }
    await scoped.query(`set nile.tenant_id = 'not-a-uuid'`);
    expect(await titles(scoped, table)).to.deep.equal(['a1']);

    // The API's tenant role (SET LOCAL ROLE from a session that is no credential) on the built-in
    // tenant-aware table: no setting, no rows; the alias is not its setting.
    const asTenantRole = async (setup: string) => {
      await database.query('begin');
      try {
        await database.query(`set local role ${roles.tenant}; ${setup}`);
        return await values(database, 'select distinct tenant_id from users.tenant_users');
      } finally {
        await database.query('rollback');
      }
    };
    expect(await asTenantRole('select 1')).to.deep.equal([]);
    expect(await asTenantRole(`set local nile.tenant_id = '${tenants.a}'`)).to.deep.equal([]);
    expect(await asTenantRole(`set local platform.tenant_id = '${tenants.b}'`)).to.deep.equal([tenants.b]);
    expect(await asTenantRole(`set local platform.tenant_id = '${tenants.b}'; set local nile.tenant_id = '${tenants.a}'`)).to.deep.equal([tenants.b]);
  });
});
