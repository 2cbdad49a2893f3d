import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: triggers, grants and event triggers are PostgreSQL's, so it runs against a real server.
import { createScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName } from './credential-roles.js';
import { databaseRoleNames, type DatabaseRoles } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, firstColumn, dropCredentialDatabase } from './scratch-data-plane.test.js';
import { TENANT_CONTEXT_SETTING } from './tenant-context.js';

describe('write guards: TRUNCATE of tenant-aware tables, read-only shared tables (built-in schema steps 10 and 11)', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let roles: DatabaseRoles;
  let tenants: { a: string; b: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];
  /** The tables made before steps 10 and 11 ran (an older database brought up to date). */
  let existing: { aware: string; shared: string };


  before(async function () {
    postgres = await startTestPostgres();
    const scratch = await createScratchDatabase(postgres, 'guards');
    name = scratch.name;
    roles = databaseRoleNames(name);
    [admin, database] = [await connect(postgres.adminUrl), await connect(scratch.url)];
    // Up to step 9 first, with the developer's tables, as a database built by an earlier release holds them.
    await installUpTo(database, 9);
    existing = { aware: 'old_orders', shared: 'old_plans' };
    await database.query(`set role ${roles.owner};
      create table public.old_orders (id int, tenant_id uuid);
      create table public.old_plans (id int, name text);
      reset role`);
    await installBuiltInSchema(database);
    const [a, b] = await firstColumn(database, `insert into tenants (name) values ('A'), ('B') returning id`);
    tenants = { a, b };
  });

  afterEach(async function () {
    await Promise.all(sessions.splice(0).map((session) => session.end().catch(() => {})));
  });

  after(async function () {
    await dropCredentialDatabase({ postgres, admin, database, name, credentials });
  });

  /** The installer applies every step; to stop at one, the later ones are recorded as done, then forgotten. */
  async function installUpTo(client: pg.Client, version: number): Promise<void> {
    await client.query('create schema platform');
    await client.query('create table platform.schema_steps (version int primary key, applied timestamptz not null default now())');
    await client.query('insert into platform.schema_steps (version) select generate_series($1::int + 1, 1000)', [version]);
    await installBuiltInSchema(client);
    await client.query('delete from platform.schema_steps where version > $1', [version]);
  }

  async function loginAs(tenantId: string | null): Promise<pg.Client> {
    const role = credentialRoleName();
    const password = randomBytes(18).toString('base64url');
    await createCredentialRole(admin, database, { physicalName: name, roleName: role, password, tenantId });
    credentials.push(role);
    const session = await connect(credentialUrl(postgres.adminUrl, name, { role, password }));
    sessions.push(session);
    return session;
  }

  /** A table an unscoped credential creates now, with a row of each tenant. */
  async function newTable(owner: pg.Client, columns: string): Promise<string> {
    const table = `t_${randomBytes(4).toString('hex')}`;
    await owner.query(`create table public.${table} (${columns})`);
    return table;
  }

  async function rowsOf(table: string): Promise<number> {
    return Number((await database.query(`select count(*) from public.${table}`)).rows[0].count);
  }

  const truncateRefused = (table: string) => ({
    code: '42501',
    message: `TRUNCATE of tenant-aware table public.${table} is refused to a tenant-scoped credential or in a tenant context: it ignores row-level security and would empty every tenant`,
  });

  describe('TRUNCATE of a tenant-aware table (step 10)', function () {
    it('is refused to a tenant-scoped credential, even when the owner granted it TRUNCATE', async function () {
      const owner = await loginAs(null);
      const table = await newTable(owner, 'id int, tenant_id uuid');
      await database.query(`insert into public.${table} values (1, $1), (2, $2)`, [tenants.a, tenants.b]);
      const scoped = await loginAs(tenants.a);
      const denied = await rejection(scoped.query(`truncate public.${table}`));
      expect({ code: denied.code, message: denied.message }).to.deep.equal({ code: '42501', message: `permission denied for table ${table}` });
      await owner.query(`grant truncate on public.${table} to ${roles.scoped}`);
      const refused = await rejection(scoped.query(`truncate public.${table}`));
      expect({ code: refused.code, message: refused.message }).to.deep.equal(truncateRefused(table));
      expect(await rowsOf(table)).to.equal(2);
    });

    it('is refused to an unscoped credential with a tenant context, and allowed without one', async function () {
      const owner = await loginAs(null);
      const table = await newTable(owner, 'id int, tenant_id text');
      await database.query(`insert into public.${table} values (1, $1), (2, $2)`, [tenants.a, tenants.b]);
      await owner.query(`set ${TENANT_CONTEXT_SETTING} = '${tenants.a}'`);
      const refused = await rejection(owner.query(`truncate public.${table}`));
      expect({ code: refused.code, message: refused.message }).to.deep.equal(truncateRefused(table));
      expect(await rowsOf(table)).to.equal(2);
      await owner.query(`reset ${TENANT_CONTEXT_SETTING}`);
      await owner.query(`truncate public.${table}`);
      expect(await rowsOf(table)).to.equal(0);
    });

    it('guards tables made before the step, tables made tenant-aware later, partitioned tables, and leaves shared tables alone', async function () {
      const owner = await loginAs(null);
      const later = await newTable(owner, 'id int');
      await owner.query(`alter table public.${later} add column tenant_id uuid`);
      const partitioned = await newTable(owner, 'id int, tenant_id uuid not null');
      await owner.query(`drop table public.${partitioned}`);
      await owner.query(`create table public.${partitioned} (id int, tenant_id uuid not null) partition by list (tenant_id)`);
      await owner.query(`create table public.${partitioned}_a partition of public.${partitioned} for values in ('${tenants.a}')`);
      await database.query(`insert into public.${partitioned} values (1, $1)`, [tenants.a]);
      const shared = await newTable(owner, 'id int, name text');
      await owner.query(`set ${TENANT_CONTEXT_SETTING} = '${tenants.a}'`);
      for (const table of [existing.aware, later, partitioned, `${partitioned}_a`]) {
        const refused = await rejection(owner.query(`truncate public.${table}`));
        expect({ code: refused.code, message: refused.message }, table).to.deep.equal(truncateRefused(table));
      }
      expect(await rowsOf(partitioned)).to.equal(1);
      await owner.query(`truncate public.${shared}, public.${existing.shared}`);
    });
  });

  describe('shared tables (step 11)', function () {
    it('lets a tenant-scoped credential read a shared table but not change it, and write its tenant’s rows of a tenant-aware one', async function () {
      const owner = await loginAs(null);
      const shared = await newTable(owner, 'id int, name text');
      const aware = await newTable(owner, 'id int, tenant_id uuid');
      await database.query(`insert into public.${shared} values (1, 'basic')`);
      const scoped = await loginAs(tenants.a);
      for (const table of [shared, existing.shared]) {
        expect((await scoped.query(`select count(*)::int as n from public.${table}`)).rows, table).to.have.length(1);
        for (const sql of [`insert into public.${table} (id) values (2)`, `update public.${table} set id = 3`, `delete from public.${table}`]) {
          const refused = await rejection(scoped.query(sql).then(() => Promise.reject(new Error(`${sql} passed`))));
          expect({ code: refused.code, message: refused.message }, sql).to.deep.equal({ code: '42501', message: `permission denied for table ${table}` });
        }
      }
      for (const table of [aware, existing.aware]) {
        await scoped.query(`insert into public.${table} values (1, $1)`, [tenants.a]);
        expect((await scoped.query(`update public.${table} set id = 2 returning id`)).rows).to.deep.equal([{ id: 2 }]);
        expect((await scoped.query(`delete from public.${table}`)).rowCount).to.equal(1);
      }
      // A view runs with its reader's rights: writing through it meets the shared table's grants.
      await owner.query(`create view public.${shared}_v as select * from public.${shared}`);
      const throughView = await rejection(scoped.query(`insert into public.${shared}_v (id) values (4)`));
      expect({ code: throughView.code, message: throughView.message }).to.deep.equal({ code: '42501', message: `permission denied for table ${shared}` });
    });

    it('lets the owner grant more: an explicit GRANT INSERT to the scoped role works, and survives a later ALTER TABLE', async function () {
      const owner = await loginAs(null);
      const shared = await newTable(owner, 'id int, name text');
      await owner.query(`grant insert on public.${shared} to ${roles.scoped}`);
      await owner.query(`alter table public.${shared} add column note text`);
      const scoped = await loginAs(tenants.b);
      await scoped.query(`insert into public.${shared} (id, name) values (1, 'from b')`);
      expect((await scoped.query(`select id, name from public.${shared}`)).rows).to.deep.equal([{ id: 1, name: 'from b' }]);
      const refused = await rejection(scoped.query(`update public.${shared} set name = 'x'`));
      expect(refused.code).to.equal('42501');
    });
  });
});
