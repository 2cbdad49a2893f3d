import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: each case is a route around row-level security an adversarial probe found on a real server.
import { createScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName } from './credential-roles.js';
import { databaseRoleNames, type DatabaseRoles } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, firstColumn, dropCredentialDatabase } from './scratch-data-plane.test.js';
import { TENANT_CONTEXT_SETTING } from './tenant-context.js';

describe('isolation guards against the routes a probe found (built-in schema step 4)', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let roles: DatabaseRoles;
  let tenants: { a: string; b: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];


  before(async function () {
    postgres = await startTestPostgres();
    const scratch = await createScratchDatabase(postgres, 'bypass');
    name = scratch.name;
    roles = databaseRoleNames(name);
    [admin, database] = [await connect(postgres.adminUrl), await connect(scratch.url)];
    await installBuiltInSchema(database);
    const [a, b] = await values(database, `insert into tenants (name) values ('A'), ('B') returning id`);
    tenants = { a, b };
  });

  afterEach(async function () {
    await Promise.all(sessions.splice(0).map((session) => session.end().catch(() => {})));
  });

  after(async function () {
    await dropCredentialDatabase({ postgres, admin, database, name, credentials });
  });

  const values = firstColumn;

  /** The connection URL of a new credential: bound to the tenant, or unscoped for null. */
  async function newCredential(tenantId: string | null): Promise<string> {
    const role = credentialRoleName();
    const password = randomBytes(18).toString('base64url');
    await createCredentialRole(admin, database, { physicalName: name, roleName: role, password, tenantId });
    credentials.push(role);
    return credentialUrl(postgres.adminUrl, name, { role, password });
  }

  async function login(url: string): Promise<pg.Client> {
    const session = await connect(url);
    sessions.push(session);
    return session;
  }

  async function loginAs(tenantId: string | null): Promise<pg.Client> {
    return login(await newCredential(tenantId));
  }

  async function expectRefused(client: pg.ClientBase, sql: string, message: string): Promise<void> {
    const error = await rejection(client.query(sql));
    expect({ code: error.code, message: error.message }, sql).to.deep.equal({ code: '42501', message });
  }

  /** A table an unscoped credential creates, with rows of both tenants (written by the superuser). */
  async function todosBy(session: pg.Client): Promise<string> {
    const table = `todos_${randomBytes(4).toString('hex')}`;
    await session.query(`create table ${table} (id serial primary key, tenant_id uuid not null references tenants (id), title text)`);
    await database.query(`insert into ${table} (tenant_id, title) values ($1, 'a1'), ($2, 'b1')`, [tenants.a, tenants.b]);
    return table;
  }

  it('refuses a tenant-aware table under an inheritance parent without row-level security', async function () {
    const unscoped = await loginAs(null);
    const table = await todosBy(unscoped);
    const underParent = (child: string) => `table public.${child} would put a tenant-aware table under an inheritance parent without row-level security`;
    await unscoped.query('create table loose (title text)');
    await expectRefused(unscoped, `alter table ${table} inherit loose`, underParent(table));
    await expectRefused(unscoped, 'create table loose_child (tenant_id uuid, title text) inherits (loose)', underParent('loose_child'));
    await unscoped.query('create table plain_child (title text) inherits (loose)');
    await expectRefused(unscoped, 'alter table plain_child add column tenant_id uuid', underParent('plain_child'));
    await unscoped.query('alter table plain_child add column note text');

    const scoped = await loginAs(tenants.a);
    expect(await values(scoped, 'select title from loose')).to.deep.equal([]);
    expect((await scoped.query(`update ${table} set title = 'x'`)).rowCount).to.equal(1);
    expect(await values(database, `select title from ${table} order by id`)).to.deep.equal(['x', 'b1']);
  });

  it('keeps inheritance whose every ancestor is tenant-aware, and secures children a parent’s new tenant_id reaches', async function () {
    const unscoped = await loginAs(null);
    const table = await todosBy(unscoped);
    await unscoped.query(`create table todo_archive (title text) inherits (${table})`);
    await database.query(`insert into todo_archive (tenant_id, title) values ($1, 'a-old'), ($2, 'b-old')`, [tenants.a, tenants.b]);
    await unscoped.query('create table events (title text)');
    await unscoped.query('create table event_log (title text) inherits (events)');
    await unscoped.query('alter table events add column tenant_id uuid');
    await database.query(`insert into event_log (tenant_id, title) values ($1, 'a-log'), ($2, 'b-log')`, [tenants.a, tenants.b]);

    const scoped = await loginAs(tenants.b);
    expect(await values(scoped, `select title from ${table} order by title`)).to.deep.equal(['b-old', 'b1']);
    expect(await values(scoped, 'select title from todo_archive')).to.deep.equal(['b-old']);
    expect(await values(scoped, 'select title from events')).to.deep.equal(['b-log']);
    expect(await values(scoped, 'select title from event_log')).to.deep.equal(['b-log']);
  });

  it('refuses every materialized view, even as the admin role: a function can read for it what no catalog records', async function () {
    const unscoped = await loginAs(null);
    const table = await todosBy(unscoped);
    await unscoped.query(`create function titles() returns setof text language sql stable as 'select title from public.${table}'`);
    const refused = (view: string) => `materialized view public.${view} cannot be created in a platform database`;
    await expectRefused(unscoped, 'create materialized view through_function as select * from titles()', refused('through_function'));
    await unscoped.query('create table plans (id int primary key, title text)');
    await expectRefused(unscoped, 'create materialized view plan_titles as select title from plans', refused('plan_titles'));
    await unscoped.query(`set role ${roles.admin}`);
    await expectRefused(unscoped, 'create materialized view as_admin as select * from titles()', refused('as_admin'));
    await unscoped.query('reset role');
    expect(await values(database, `select count(*)::int from pg_matviews`)).to.deep.equal([0]);
  });

  it('refuses a tenant_id the policies cannot trust: a customer’s type, or a nondeterministic collation', async function () {
    const unscoped = await loginAs(null);
    const untrusted = (table: string) => `column tenant_id of public.${table} must be uuid, text or varchar with a deterministic collation`;
    await unscoped.query('create type tenant_ref as (v uuid)');
    await unscoped.query('create domain tenant_text as text');
    await expectRefused(unscoped, 'create table notes (tenant_id tenant_ref, body text)', untrusted('notes'));
    await expectRefused(unscoped, 'create table notes (tenant_id tenant_text, body text)', untrusted('notes'));
    await expectRefused(unscoped, 'create table notes (tenant_id uuid[], body text)', untrusted('notes'));
    await unscoped.query('create table drafts (owner tenant_ref, body text)');
    await expectRefused(unscoped, 'alter table drafts rename column owner to tenant_id', untrusted('drafts'));
    await expectRefused(unscoped, 'alter table drafts add column tenant_id tenant_ref', untrusted('drafts'));
    // Declares every hexadecimal digit equal, so every tenant id equal to every other.
    await unscoped.query(`create collation any_hex (provider = icu, locale = 'und', rules = '&0=1=2=3=4=5=6=7=8=9=a=b=c=d=e=f', deterministic = false)`);
    await expectRefused(unscoped, 'create table notes (tenant_id text collate any_hex, body text)', untrusted('notes'));
    await unscoped.query('create table drafts_by_text (owner text collate any_hex, body text)');
    await expectRefused(unscoped, 'alter table drafts_by_text rename column owner to tenant_id', untrusted('drafts_by_text'));

    for (const type of ['uuid', 'text', 'varchar(36)', 'text collate "C"']) {
      const table = `notes_${randomBytes(4).toString('hex')}`;
      await unscoped.query(`create table ${table} (tenant_id ${type}, body text)`);
      await database.query(`insert into ${table} values ($1, 'a'), ($2, 'b')`, [tenants.a, tenants.b]);
      expect(await values(await loginAs(tenants.b), `select body from ${table}`), type).to.deep.equal(['b']);
    }
  });

  it('refuses typed tables: ALTER TYPE ... CASCADE would give them a tenant_id no trigger sees', async function () {
    const unscoped = await loginAs(null);
    const typed = (table: string) => `table public.${table} cannot be a typed table (OF a composite type) in a platform database`;
    await unscoped.query('create type note_row as (tid uuid, body text)');
    await expectRefused(unscoped, 'create table typed_notes of note_row', typed('typed_notes'));
    await expectRefused(unscoped, 'create table typed_parts of note_row partition by list (tid)', typed('typed_parts'));
    await unscoped.query('create table loose_notes (tid uuid, body text)');
    await expectRefused(unscoped, 'alter table loose_notes of note_row', typed('loose_notes'));
  });

  it('shows a scoped credential of a softly deleted tenant nothing, and lets it write nothing', async function () {
    const table = await todosBy(await loginAs(null));
    const [doomed] = await values(database, `insert into tenants (name) values ('doomed') returning id`);
    await database.query(`insert into ${table} (tenant_id, title) values ($1, 'doomed1')`, [doomed]);
    const [before, later] = [await loginAs(doomed), await newCredential(doomed)];
    expect(await values(before, `select title from ${table}`)).to.deep.equal(['doomed1']);
    await database.query('update tenants set deleted = now() where id = $1', [doomed]);

    for (const scoped of [before, await login(later)]) {
      expect(await values(scoped, `select title from ${table}`)).to.deep.equal([]);
      expect(await values(scoped, 'select name from tenants')).to.deep.equal([]);
      await expectRefused(scoped, `insert into ${table} (tenant_id, title) values ('${doomed}', 'still writing')`, `new row violates row-level security policy for table "${table}"`);
      await scoped.query('select set_config($1, $2, false)', [TENANT_CONTEXT_SETTING, tenants.a]);
      expect(await values(scoped, `select title from ${table}`)).to.deep.equal([]);
    }
    expect(await values(database, `select title from ${table} where tenant_id = $1`, [doomed])).to.deep.equal(['doomed1']);
  });
});
