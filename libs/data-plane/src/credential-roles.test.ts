import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: roles, privileges and row-level security are PostgreSQL's, so it runs against a real server.
import { NotFoundError } from '@platform/domain';
import { createScratchDatabase, dropScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName, dropCredentialRole, dropDatabaseRoles } from './credential-roles.js';
import { databaseRoleNames, type DatabaseRoles } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, firstColumn } from './scratch-data-plane.test.js';
import { TENANT_CONTEXT_SETTING } from './tenant-context.js';

interface Credential {
  role: string;
  password: string;
}

describe('credential roles (built-in schema step 4)', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let other: string;
  let roles: DatabaseRoles;
  let tenants: { a: string; b: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];


  async function provisioned(): Promise<string> {
    const scratch = await createScratchDatabase(postgres, 'cred');
    const client = await connect(scratch.url);
    await installBuiltInSchema(client).finally(() => client.end());
    return scratch.name;
  }

  before(async function () {
    postgres = await startTestPostgres();
    [name, other] = [await provisioned(), await provisioned()];
    roles = databaseRoleNames(name);
    [admin, database] = [await connect(postgres.adminUrl), await connect(postgres.urlFor(name))];
    const [a, b] = await values(database, `insert into tenants (name) values ('A'), ('B') returning id`);
    tenants = { a, b };
    const [alice, bob] = await values(database, `insert into users.users (email) values ('alice@a.test'), ('bob@b.test') returning id`);
    await database.query('insert into users.tenant_users (tenant_id, user_id) values ($1, $2), ($3, $4)', [a, alice, b, bob]);
  });

  afterEach(async function () {
    await Promise.all(sessions.splice(0).map((session) => session.end().catch(() => {})));
  });

  after(async function () {
    for (const role of credentials) await dropCredentialRole(admin, database, { physicalName: name, roleName: role });
    await database?.end();
    for (const each of [name, other]) {
      await dropScratchDatabase(postgres, each);
      await dropDatabaseRoles(admin, each);
    }
    await admin?.end();
    await postgres?.stop();
  });

  const values = firstColumn;

  async function newCredential(tenantId: string | null): Promise<Credential> {
    const credential = { role: credentialRoleName(), password: randomBytes(18).toString('base64url') };
    await createCredentialRole(admin, database, { physicalName: name, roleName: credential.role, password: credential.password, tenantId });
    credentials.push(credential.role);
    return credential;
  }

  function urlOf(credential: Credential, databaseName = name): string {
    return credentialUrl(postgres.adminUrl, databaseName, credential);
  }

  /** A session of the credential on the database (another one when named). */
  async function login(credential: Credential, databaseName = name): Promise<pg.Client> {
    const session = await connect(urlOf(credential, databaseName));
    sessions.push(session);
    return session;
  }

  async function expectRefused(client: pg.ClientBase, sql: string, message: string): Promise<void> {
    const error = await rejection(client.query(sql));
    expect({ code: error.code, message: error.message }, sql).to.deep.equal({ code: '42501', message });
  }

  async function setTenant(client: pg.ClientBase, tenantId: string): Promise<void> {
    await client.query('select set_config($1, $2, false)', [TENANT_CONTEXT_SETTING, tenantId]);
  }

  /** A table an unscoped credential creates, with rows of both tenants (written by the superuser). */
  async function todosOf(credential: Credential): Promise<string> {
    const table = `todos_${randomBytes(4).toString('hex')}`;
    const session = await login(credential);
    await session.query(`create table ${table} (id serial primary key, tenant_id uuid not null references tenants (id), title text)`);
    await database.query(`insert into ${table} (tenant_id, title) values ($1, 'a1'), ($2, 'b1')`, [tenants.a, tenants.b]);
    return table;
  }

  it('creates login roles that bypass nothing, members of their database’s roles only', async function () {
    const [unscoped, scoped] = [await newCredential(null), await newCredential(tenants.a)];
    const attributes = await admin.query(
      `select rolname, rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolinherit, rolconnlimit,
              starts_with(rolpassword, 'SCRAM-SHA-256$4096:') as scram,
              array(select format('%s inherit=%s set=%s', g.rolname, m.inherit_option::text, m.set_option::text)
                      from pg_auth_members m join pg_roles g on g.oid = m.roleid where m.member = r.oid order by 1) as memberships
         from pg_authid r where rolname = any($1) order by rolname = $2 desc`,
      [[unscoped.role, scoped.role], unscoped.role],
    );
    const plain = { rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false, rolinherit: true, rolconnlimit: 100, scram: true };
    expect(attributes.rows).to.deep.equal([
      { rolname: unscoped.role, ...plain, memberships: [`${roles.admin} inherit=false set=true`, `${roles.owner} inherit=true set=true`] },
      { rolname: scoped.role, ...plain, memberships: [`${roles.scoped} inherit=true set=false`] },
    ]);
    expect(unscoped.role).to.match(/^cred_[a-z2-7]{20}$/);
    expect(await values(database, 'select tenant_id from platform.credential_tenants where role_name = $1', [scoped.role])).to.deep.equal([tenants.a]);
  });

  it('lets unscoped credentials create tables that every credential of the database uses, a tenant at a time', async function () {
    const [first, second] = [await newCredential(null), await newCredential(null)];
    const session = await login(first);
    await session.query(`create table notes (id serial primary key, tenant_id uuid not null references tenants (id), body text)`);
    expect(await values(database, `select tableowner from pg_tables where tablename = 'notes'`)).to.deep.equal([roles.owner]);
    // Without a tenant context an unscoped credential writes for any tenant it names (step 12).
    await session.query(`insert into notes (tenant_id, body) values ($1, 'no context')`, [tenants.a]);
    await session.query('begin');
    await session.query('select set_config($1, $2, true)', [TENANT_CONTEXT_SETTING, tenants.a]);
    await session.query(`insert into notes (tenant_id, body) values ($1, 'from first')`, [tenants.a]);
    await session.query('commit');

    const another = await login(second);
    await setTenant(another, tenants.a);
    await another.query(`insert into notes (tenant_id, body) values ($1, 'from second')`, [tenants.a]);
    expect(await values(another, 'select body from notes order by id')).to.deep.equal(['no context', 'from first', 'from second']);
    await setTenant(another, tenants.b);
    expect(await values(another, 'select body from notes')).to.deep.equal([]);
  });

  it('shows an unscoped credential every tenant’s rows without a context, one tenant’s in a context, and every row as the admin role', async function () {
    const credential = await newCredential(null);
    const table = await todosOf(credential);
    const session = await login(credential);
    expect(await values(session, `select title from ${table} order by title`)).to.deep.equal(['a1', 'b1']);
    expect(await values(session, 'select name from tenants order by name')).to.deep.equal(['A', 'B']);
    expect(await values(session, 'select email from users.users order by email')).to.deep.equal(['alice@a.test', 'bob@b.test']);
    await setTenant(session, tenants.b);
    expect(await values(session, `select title from ${table}`)).to.deep.equal(['b1']);
    expect(await values(session, 'select name from tenants')).to.deep.equal(['B']);
    expect(await values(session, 'select email from users.users')).to.deep.equal(['bob@b.test']);
    await session.query(`set role ${roles.admin}`);
    expect(await values(session, `select title from ${table} order by title`)).to.deep.equal(['a1', 'b1']);
    expect(await values(session, 'select name from tenants order by name')).to.deep.equal(['A', 'B']);
    await session.query('reset role');
    expect(await values(session, `select title from ${table}`)).to.deep.equal(['b1']);
    await session.query(`reset ${TENANT_CONTEXT_SETTING}`);
    expect(await values(session, `select title from ${table} order by title`)).to.deep.equal(['a1', 'b1']);
  });

  it('keeps a scoped credential to its tenant’s rows, whatever it sends', async function () {
    const table = await todosOf(await newCredential(null));
    const scoped = await login(await newCredential(tenants.a));
    const seen = async () => ({
      titles: await values(scoped, `select title from ${table} order by id`),
      tenants: await values(scoped, 'select name from tenants'),
      users: await values(scoped, 'select email from users.users'),
    });
    const onlyA = { titles: ['a1'], tenants: ['A'], users: ['alice@a.test'] };
    expect(await seen()).to.deep.equal(onlyA);

    await scoped.query(`insert into ${table} (tenant_id, title) values ($1, 'a2')`, [tenants.a]);
    await expectRefused(scoped, `insert into ${table} (tenant_id, title) values ('${tenants.b}', 'b2')`, `new row violates row-level security policy for table "${table}"`);
    await expectRefused(scoped, `update ${table} set tenant_id = '${tenants.b}' where title = 'a1'`, `new row violates row-level security policy for table "${table}"`);
    expect((await scoped.query(`update ${table} set title = 'x' where title = 'b1'`)).rowCount).to.equal(0);
    expect((await scoped.query(`delete from ${table} where title = 'b1'`)).rowCount).to.equal(0);
    await expectRefused(scoped, `insert into tenants (name) values ('C')`, 'permission denied for table tenants');
    await expectRefused(scoped, 'create table mine (id int)', 'permission denied for schema public');
    const afterWrites = { ...onlyA, titles: ['a1', 'a2'] };

    await scoped.query(`set ${TENANT_CONTEXT_SETTING} = '${tenants.b}'`);
    expect(await seen()).to.deep.equal(afterWrites);
    await scoped.query(`reset ${TENANT_CONTEXT_SETTING}`);
    expect(await seen()).to.deep.equal(afterWrites);
    await setTenant(scoped, tenants.b);
    expect(await seen()).to.deep.equal(afterWrites);
    await scoped.query('begin');
    await scoped.query('select set_config($1, $2, true)', [TENANT_CONTEXT_SETTING, tenants.b]);
    expect(await seen()).to.deep.equal(afterWrites);
    await scoped.query('commit');
    for (const role of [roles.admin, roles.owner, roles.scoped, 'postgres']) {
      await expectRefused(scoped, `set role ${role}`, `permission denied to set role "${role}"`);
    }
    await expectRefused(scoped, 'set session authorization postgres', 'permission denied to set session authorization "postgres"');
    await scoped.query('set row_security = off');
    await expectRefused(scoped, `select title from ${table}`, `query would be affected by row-level security policy for table "${table}"`);
  });

  it('shows a scoped credential whose tenant was deleted nothing at all', async function () {
    const table = await todosOf(await newCredential(null));
    const [doomed] = await values(database, `insert into tenants (name) values ('doomed') returning id`);
    const scoped = await login(await newCredential(doomed));
    await database.query('delete from tenants where id = $1', [doomed]);
    await setTenant(scoped, tenants.a);
    expect(await values(scoped, `select title from ${table}`)).to.deep.equal([]);
    expect(await values(scoped, 'select name from tenants')).to.deep.equal([]);
  });

  it('keeps every credential out of auth and platform, and out of every other database', async function () {
    for (const credential of [await newCredential(null), await newCredential(tenants.b)]) {
      const session = await login(credential);
      for (const [table, schema] of [['auth.credentials', 'auth'], ['auth.sessions', 'auth'], ['auth.one_time_tokens', 'auth'], ['platform.credential_tenants', 'platform']]) {
        await expectRefused(session, `select * from ${table}`, `permission denied for schema ${schema}`);
      }
      await expectRefused(session, `select platform.current_tenant_id()`, 'permission denied for schema platform');
      // Another platform database, and the maintenance databases, which createCredentialRole closes to PUBLIC.
      for (const elsewhere of [other, 'postgres', 'template1']) {
        const refused = await rejection(login(credential, elsewhere));
        expect({ code: refused.code, message: refused.message }).to.deep.equal({ code: '42501', message: `permission denied for database "${elsewhere}"` });
      }
    }
  });

  it('refuses the routes around row-level security', async function () {
    const credential = await newCredential(null);
    const table = await todosOf(credential);
    const session = await login(credential);
    const policy = (name: string) => `policy ${name} on public.${table}`;
    await session.query(`create view recent as select * from ${table}`);
    await expectRefused(session, `create materialized view snapshot as select * from ${table}`, 'materialized view public.snapshot cannot be created in a platform database');
    await expectRefused(session, `create materialized view snapshot as select * from recent`, 'materialized view public.snapshot cannot be created in a platform database');
    await expectRefused(session, `create function everything() returns setof ${table} language sql security definer as 'select * from ${table}'`, 'function public.everything() cannot be SECURITY DEFINER in a platform database');
    await session.query(`create function mine() returns setof ${table} language sql as 'select * from ${table}'`);
    await expectRefused(session, 'alter function mine() security definer', 'function public.mine() cannot be SECURITY DEFINER in a platform database');
    await expectRefused(session, `create policy open on ${table} using (true)`, `${policy('open')} cannot be created or altered: its table is tenant-aware`);
    await expectRefused(session, `alter policy tenant_isolation on ${table} using (true)`, `${policy('tenant_isolation')} cannot be created or altered: its table is tenant-aware`);
    // From step 14, dropping the platform's policies or turning row-level security off (as
    // drizzle-kit push does) is undone within the statement: the table is as isolated as before.
    const isolation = async () =>
      (
        await database.query(
          `select c.relrowsecurity, c.relforcerowsecurity,
                  (select json_agg(json_build_array(polname, polpermissive, polroles::regrole[]::text[], pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid)) order by polname)
                     from pg_policy where polrelid = c.oid) as policies
             from pg_class c where c.oid = $1::regclass`,
          [table],
        )
      ).rows[0];
    const before = await isolation();
    expect(before.policies.map((each: unknown[]) => each[0])).to.deep.equal(['tenant_isolation', 'tenant_isolation_required', 'tenant_isolation_unscoped', 'tenant_isolation_unscoped_required']);
    for (const statement of [
      ...['tenant_isolation', 'tenant_isolation_required', 'tenant_isolation_unscoped', 'tenant_isolation_unscoped_required'].map((name) => `drop policy ${name} on ${table}`),
      `alter table ${table} no force row level security`,
      `alter table ${table} disable row level security`,
    ]) {
      await session.query(statement);
      expect(await isolation(), statement).to.deep.equal(before);
    }
    await expectRefused(session, `alter table ${table} drop column tenant_id cascade`, `${policy('tenant_isolation')} of a tenant-aware table cannot be dropped`);
    // What is not over a tenant-aware table stays the customer's to build.
    await session.query('create table plans (id int primary key, title text)');
    await session.query('create policy readable on plans using (true)');

    // A view built by the admin role (BYPASSRLS) is handed to the owner role and reads as its reader.
    await session.query(`set role ${roles.admin}`);
    await session.query(`create view everything with (security_invoker = false) as select * from ${table}`);
    await session.query('reset role');
    await session.query(`alter view everything owner to ${roles.admin}`);
    expect((await database.query(`select relowner::regrole::text as owner, reloptions from pg_class where relname in ('everything', 'recent') order by relname`)).rows).to.deep.equal([
      { owner: roles.owner, reloptions: ['security_invoker=true'] },
      { owner: roles.owner, reloptions: ['security_invoker=true'] },
    ]);
    await expectRefused(session, 'alter view everything set (security_invoker = false)', 'view public.everything must keep security_invoker');
    await expectRefused(session, 'alter view everything reset (security_invoker)', 'view public.everything must keep security_invoker');
    const scoped = await login(await newCredential(tenants.b));
    expect(await values(scoped, 'select title from everything')).to.deep.equal(['b1']);
    expect(await values(scoped, 'select title from recent')).to.deep.equal(['b1']);
    expect(await values(scoped, 'select title from mine()')).to.deep.equal(['b1']);
  });

  it('refuses a tenant that does not exist, and leaves no role behind', async function () {
    for (const tenantId of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const role = credentialRoleName();
      const error = await rejection(createCredentialRole(admin, database, { physicalName: name, roleName: role, password: 'secret', tenantId }));
      expect(error).to.be.instanceOf(NotFoundError);
      expect({ code: error.code, message: error.message }).to.deep.equal({ code: 'tenant_not_found', message: 'Tenant not found' });
      expect(await values(admin, 'select count(*)::int from pg_roles where rolname = $1', [role])).to.deep.equal([0]);
    }
    const badName = await rejection(createCredentialRole(admin, database, { physicalName: name, roleName: 'Robert"; drop table x', password: 'secret', tenantId: null }));
    expect(badName.message).to.equal(`refusing credential role name 'Robert"; drop table x'`);
    const elsewhere = await rejection(createCredentialRole(admin, database, { physicalName: other, roleName: credentialRoleName(), password: 'secret', tenantId: null }));
    expect(elsewhere.message).to.equal(`expected a connection to ${other}, got one to ${name}`);
  });

  it('refuses a wrong password; dropping a credential ends its sessions and its logins, twice without harm', async function () {
    const credential = await newCredential(tenants.a);
    const wrong = await rejection(login({ ...credential, password: 'wrong' }));
    expect({ code: wrong.code, message: wrong.message }).to.deep.equal({ code: '28P01', message: `password authentication failed for user "${credential.role}"` });

    const session = await login(credential);
    const ended = new Promise<{ code?: string }>((resolve) => session.once('error', resolve));
    await dropCredentialRole(admin, database, { physicalName: name, roleName: credential.role });
    expect((await ended).code).to.equal('57P01');
    const gone = await rejection(login(credential));
    expect({ code: gone.code, message: gone.message }).to.deep.equal({ code: '28P01', message: `password authentication failed for user "${credential.role}"` });
    expect(await values(database, 'select count(*)::int from platform.credential_tenants where role_name = $1', [credential.role])).to.deep.equal([0]);
    await dropCredentialRole(admin, database, { physicalName: name, roleName: credential.role });
    expect(await values(admin, 'select count(*)::int from pg_roles where rolname = $1', [credential.role])).to.deep.equal([0]);
  });
});
