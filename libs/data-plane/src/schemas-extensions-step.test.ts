import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: schemas, extensions and event triggers are PostgreSQL's, so it runs against a real server.
import { createScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName } from './credential-roles.js';
import { databaseRoleNames, type DatabaseRoles } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { EXTENSION_ALLOWLIST } from './schemas-extensions-step.js';
import { connect, credentialUrl, dropCredentialDatabase, firstColumn } from './scratch-data-plane.test.js';

type PgError = Error & { code?: string; detail?: string; hint?: string };

describe('schemas and extensions for credentials (built-in schema step 13)', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let roles: DatabaseRoles;
  let tenants: { a: string; b: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];
  const values = firstColumn;

  before(async function () {
    postgres = await startTestPostgres();
    const scratch = await createScratchDatabase(postgres, 'schemas');
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

  async function loginAs(tenantId: string | null): Promise<pg.Client> {
    const role = credentialRoleName();
    const password = randomBytes(18).toString('base64url');
    await createCredentialRole(admin, database, { physicalName: name, roleName: role, password, tenantId });
    credentials.push(role);
    const session = await connect(credentialUrl(postgres.adminUrl, name, { role, password }));
    sessions.push(session);
    return session;
  }

  async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string; detail?: string; hint?: string }> {
    const error = (await rejection(promise)) as PgError;
    return { code: error.code, message: error.message, detail: error.detail, hint: error.hint };
  }

  const uniqueSchema = () => `app_${randomBytes(4).toString('hex')}`;

  it('lets an unscoped credential create schemas, handed to the owner role with what is made in them', async function () {
    const [first, second] = [await loginAs(null), await loginAs(null)];
    const schema = uniqueSchema();
    // Drizzle's first migration statements, as it sends them.
    await first.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await first.query(`CREATE TABLE IF NOT EXISTS "${schema}"."__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
    await first.query(`create table ${schema}.notes (id serial primary key, tenant_id uuid not null references public.tenants (id), body text)`);
    expect(await values(database, 'select nspowner::regrole::text from pg_namespace where nspname = $1', [schema])).to.deep.equal([roles.owner]);
    expect(await values(database, 'select tablename || \' \' || tableowner from pg_tables where schemaname = $1 order by 1', [schema])).to.deep.equal([
      `__drizzle_migrations ${roles.owner}`,
      `notes ${roles.owner}`,
    ]);
    // Another unscoped credential uses and changes them; a scoped one reads the shared table and may not write it.
    await second.query(`insert into "${schema}"."__drizzle_migrations" (hash, created_at) values ('h1', 1)`);
    await second.query(`alter table ${schema}.notes add column done boolean not null default false`);
    const scoped = await loginAs(tenants.a);
    expect(await values(scoped, `select hash from "${schema}"."__drizzle_migrations"`)).to.deep.equal(['h1']);
    expect(await refusal(scoped.query(`insert into "${schema}"."__drizzle_migrations" (hash) values ('h2')`))).to.deep.include({
      code: '42501',
      message: 'permission denied for table __drizzle_migrations',
    });
    expect(await refusal(scoped.query(`create schema ${uniqueSchema()}`))).to.deep.include({ code: '42501', message: `permission denied for database ${name}` });
    // Dropped by another credential, as the owner role's.
    await second.query(`drop schema ${schema} cascade`);
  });

  it('isolates a tenant-aware table in a new schema as in public, whatever a session sends', async function () {
    const owner = await loginAs(null);
    const schema = uniqueSchema();
    await owner.query(`create schema ${schema}`);
    await owner.query(`create table ${schema}.notes (id serial primary key, tenant_id uuid not null, body text)`);
    expect(await values(database, `select relrowsecurity and relforcerowsecurity from pg_class where oid = '${schema}.notes'::regclass`)).to.deep.equal([true]);
    await owner.query(`insert into ${schema}.notes (tenant_id, body) values ($1, 'a1'), ($2, 'b1')`, [tenants.a, tenants.b]);
    const bodies = (client: pg.Client) => values(client, `select body from ${schema}.notes order by body`);
    expect(await bodies(owner)).to.deep.equal(['a1', 'b1']);
    await owner.query(`set nile.tenant_id = '${tenants.b}'`);
    expect(await bodies(owner)).to.deep.equal(['b1']);
    expect(await refusal(owner.query(`insert into ${schema}.notes (tenant_id, body) values ($1, 'a2')`, [tenants.a]))).to.deep.include({
      code: '42501',
      message: `row of tenant "${tenants.a}" is outside the tenant context "${tenants.b}" (table ${schema}.notes)`,
    });
    await owner.query('reset nile.tenant_id');

    // A scoped credential: SET, RESET, set_config, SET ROLE and a new transaction widen nothing.
    const scoped = await loginAs(tenants.a);
    const onlyA = ['a1'];
    expect(await bodies(scoped)).to.deep.equal(onlyA);
    for (const sql of [
      `set nile.tenant_id = '${tenants.b}'`,
      `set platform.tenant_id = '${tenants.b}'`,
      'reset nile.tenant_id',
      'reset all',
      `select set_config('platform.tenant_id', '${tenants.b}', false)`,
    ]) {
      await scoped.query(sql);
      expect(await bodies(scoped), sql).to.deep.equal(onlyA);
    }
    await scoped.query('begin');
    await scoped.query(`select set_config('nile.tenant_id', '${tenants.b}', true)`);
    expect(await bodies(scoped), 'SET LOCAL').to.deep.equal(onlyA);
    await scoped.query('commit');
    for (const role of [roles.admin, roles.owner, roles.tenant]) {
      expect(await refusal(scoped.query(`set role ${role}`)), role).to.deep.include({ code: '42501', message: `permission denied to set role "${role}"` });
    }
    await scoped.query(`insert into ${schema}.notes (tenant_id, body) values ($1, 'a2')`, [tenants.a]);
    expect(await refusal(scoped.query(`insert into ${schema}.notes (tenant_id, body) values ($1, 'b2')`, [tenants.b]))).to.deep.include({
      code: '42501',
      message: 'new row violates row-level security policy for table "notes"',
    });
    expect(await bodies(scoped)).to.deep.equal(['a1', 'a2']);
    // Truncating the table stays refused there too; turning its row-level security off or dropping
    // its policies is undone within the statement (step 14), there too.
    expect((await refusal(owner.query(`set nile.tenant_id = '${tenants.a}'; truncate ${schema}.notes`))).code).to.equal('42501');
    await owner.query('reset nile.tenant_id');
    await owner.query(`alter table ${schema}.notes disable row level security`);
    await owner.query(`drop policy tenant_isolation_unscoped on ${schema}.notes`);
    await owner.query(`drop policy tenant_isolation on ${schema}.notes`);
    expect(await bodies(scoped)).to.deep.equal(['a1', 'a2']);
    await owner.query(`set nile.tenant_id = '${tenants.b}'`);
    expect(await bodies(owner)).to.deep.equal(['b1']);
    await owner.query('reset nile.tenant_id');
  });

  it('creates the allowlisted extensions for an unscoped credential, and refuses every other with the list', async function () {
    const owner = await loginAs(null);
    const available = new Set(await values<string>(database, 'select name from pg_available_extensions'));
    for (const extension of EXTENSION_ALLOWLIST) {
      if (!available.has(extension)) continue; // vector comes with the server's packages, when it does
      await owner.query(`create extension if not exists "${extension}"`);
    }
    const installed = await values<string>(database, 'select extname from pg_extension order by 1');
    expect(installed).to.deep.equal(EXTENSION_ALLOWLIST.filter((extension) => available.has(extension)).sort());
    const refused = (extension: string) => ({
      code: '42501',
      message: `extension "${extension}" is not available in a platform database`,
      detail: `Credentials may create these extensions: ${EXTENSION_ALLOWLIST.join(', ')}.`,
      hint: 'Extensions that reach outside the database (dblink, postgres_fdw, file_fdw, adminpack, untrusted languages) are not offered.',
    });
    for (const extension of ['dblink', 'postgres_fdw', 'file_fdw', 'adminpack', 'plperlu', 'plpython3u', 'pltclu', 'plperl', 'pltcl', 'earthdistance', 'lo']) {
      expect(await refusal(owner.query(`create extension ${extension}`)), extension).to.deep.equal(refused(extension));
    }
    expect(await refusal(owner.query('create extension if not exists "tcn" cascade')), 'quoted').to.deep.equal(refused('tcn'));
    // CREATE LANGUAGE of a language that comes as an extension is CREATE EXTENSION under another name.
    for (const language of ['plperl', 'pltcl', 'plperlu']) {
      expect(await refusal(owner.query(`create language ${language}`)), language).to.deep.equal(refused(language));
      expect(await refusal(owner.query(`create or replace trusted procedural language ${language}`)), language).to.deep.equal(refused(language));
    }
    // Hidden from the statement's text, a trusted one is created and then undone from the catalog.
    expect(await refusal(owner.query(`do $$ begin execute 'create ' || 'extension tcn'; end $$`)), 'dynamic').to.deep.equal(refused('tcn'));
    expect(await values(database, `select count(*)::int from pg_extension where extname = 'tcn'`)).to.deep.equal([0]);
    expect(await refusal(owner.query(`do $$ begin execute 'create ' || 'language pltcl'; end $$`)), 'dynamic language').to.deep.equal(refused('pltcl'));
    expect(await values(database, `select count(*)::int from pg_language where lanname = 'pltcl'`)).to.deep.equal([0]);
    await owner.query('drop extension citext');
    const scoped = await loginAs(tenants.a);
    expect(await refusal(scoped.query('create extension citext'))).to.deep.equal({
      code: '42501',
      message: 'permission denied to create extension "citext"',
      detail: undefined,
      hint: 'Must have CREATE privilege on current database to create this extension.',
    });
  });

  it('keeps to the caller’s tenant the extension functions that run a query: crosstab, connectby, TABLESAMPLE', async function () {
    const owner = await loginAs(null);
    await owner.query('create extension if not exists tablefunc');
    await owner.query('create extension if not exists tsm_system_rows');
    const table = `sales_${randomBytes(4).toString('hex')}`;
    await owner.query(`create table ${table} (tenant_id uuid not null, region text, quarter text, amount int, key text, parent text)`);
    await owner.query(
      `insert into ${table} values ($1, 'north', 'q1', 1, 'root', null), ($1, 'north', 'q2', 2, 'a-child', 'root'),
                                   ($2, 'south', 'q1', 10, 'b-child', 'root'), ($2, 'south', 'q2', 20, 'b-grandchild', 'b-child')`,
      [tenants.a, tenants.b],
    );
    const crosstab = `select region || ':' || q1 || ',' || q2 from crosstab('select region, quarter, amount from ${table} order by 1, 2') as ct(region text, q1 int, q2 int) order by 1`;
    const connectby = `select key from connectby('${table}', 'key', 'parent', 'root', 0) as t(key text, parent text, level int) order by 1`;
    const sample = `select region from ${table} tablesample system_rows(100) order by 1`;
    expect(await values(owner, crosstab)).to.deep.equal(['north:1,2', 'south:10,20']);
    expect(await values(owner, connectby)).to.deep.equal(['a-child', 'b-child', 'b-grandchild', 'root']);
    await owner.query(`set nile.tenant_id = '${tenants.a}'`);
    expect(await values(owner, crosstab)).to.deep.equal(['north:1,2']);
    expect(await values(owner, connectby)).to.deep.equal(['a-child', 'root']);
    const scoped = await loginAs(tenants.a);
    expect(await values(scoped, crosstab)).to.deep.equal(['north:1,2']);
    expect(await values(scoped, connectby)).to.deep.equal(['a-child', 'root']);
    expect(await values(scoped, sample)).to.deep.equal(['north', 'north']);
  });
});
