import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import 'reflect-metadata';
import { DataSource, EntitySchema, type MigrationInterface, type QueryRunner } from 'typeorm';
import type pg from 'pg';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

/** What a tenant-aware table's isolation looks like in the catalog: the platform's four policies, row-level security on and forced. */
const ISOLATED = {
  rowSecurity: true,
  forced: true,
  policies: ['tenant_isolation', 'tenant_isolation_required', 'tenant_isolation_unscoped', 'tenant_isolation_unscoped_required'],
};

/**
 * The migration tools of the API family's ecosystem (Knex, TypeORM, drizzle-kit), run as an
 * unscoped credential through the gateway with TLS, each against a database of its own, making
 * tenant-aware tables; after each, the tables are isolated as any other.
 */
describe('gateway: ORM migrations through the gateway, against a tenant-aware schema', function () {
  let p: GatewayPlatform;

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform();
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  async function withSession<T>(credential: TestCredential, fn: (client: pg.Client) => Promise<T>, options?: string): Promise<T> {
    const client = await connectVerified(p, credential, options ? { options } : {});
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  /** Row-level security and policies of `table`, as the catalog has them. */
  async function isolationOf(credential: TestCredential, table: string) {
    return withSession(credential, async (client) => {
      const rows = (
        await client.query(
          `select c.relrowsecurity as "rowSecurity", c.relforcerowsecurity as forced,
                  coalesce((select array_agg(polname::text order by polname) from pg_policy where polrelid = c.oid), '{}') as policies
             from pg_class c where c.oid = to_regclass($1)`,
          [table],
        )
      ).rows;
      return rows[0] ?? null;
    });
  }

  /**
   * Two tenants with a row each in `table` (columns tenant_id, title); then what a credential
   * scoped to the first sees, and what the unscoped credential sees in the second's context and
   * without one.
   */
  async function tenantViews(db: TestDatabase, unscoped: TestCredential, table: string) {
    const [a, b] = [await db.newTenant('Tenant A'), await db.newTenant('Tenant B')];
    await withSession(unscoped, (client) => client.query(`insert into ${table} (tenant_id, title) values ($1, 'a'), ($2, 'b')`, [a, b]));
    const titles = `select title from ${table} order by title`;
    const scoped = await db.newCredential(a);
    const read = async (credential: TestCredential, options?: string) => withSession(credential, async (client) => (await client.query(titles)).rows.map((row) => row.title), options);
    return {
      scoped: await read(scoped),
      inContext: await read(unscoped, `-c nile.tenant_id=${b}`),
      withoutContext: await read(unscoped),
    };
  }

  const SEPARATE_VIEWS = { scoped: ['a'], inContext: ['b'], withoutContext: ['a', 'b'] };

  function connectionOf(credential: TestCredential) {
    const url = new URL(credential.connectionUrl);
    return {
      host: url.hostname,
      port: Number(url.port),
      user: decodeURIComponent(url.username),
      password: credential.password,
      database: decodeURIComponent(url.pathname.slice(1)),
      ssl: { ca: p.ca, servername: url.hostname },
    };
  }

  it('runs Knex migrations up and down: its bookkeeping tables, then a tenant-aware table', async function () {
    const db = await p.newDatabase();
    const unscoped = await db.newCredential();
    const migrations: Record<string, Knex.Migration> = {
      '20260101000000_todos': {
        up: (knex) =>
          knex.schema.createTable('knex_todos', (table) => {
            table.uuid('tenant_id').notNullable().references('id').inTable('tenants');
            table.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'));
            table.text('title');
            table.primary(['tenant_id', 'id']);
          }),
        down: (knex) => knex.schema.dropTable('knex_todos'),
      },
    };
    const knex = knexFactory({
      client: 'pg',
      connection: connectionOf(unscoped),
      pool: { min: 0, max: 2 },
      migrations: {
        migrationSource: {
          getMigrations: async () => Object.keys(migrations),
          getMigrationName: (name: string) => name,
          getMigration: async (name: string) => migrations[name],
        },
      },
    });
    try {
      const [batch, applied] = await knex.migrate.latest();
      expect([batch, applied]).to.deep.equal([1, ['20260101000000_todos']]);
      expect((await knex('knex_migrations').select('name', 'batch')).map((row) => ({ ...row }))).to.deep.equal([{ name: '20260101000000_todos', batch: 1 }]);
      expect(await isolationOf(unscoped, 'public.knex_todos')).to.deep.equal(ISOLATED);
      expect(await tenantViews(db, unscoped, 'knex_todos')).to.deep.equal(SEPARATE_VIEWS);
      expect(await knex.migrate.latest()).to.deep.equal([1, []]);

      const [rolledBack, undone] = await knex.migrate.rollback();
      expect([rolledBack, undone]).to.deep.equal([1, ['20260101000000_todos']]);
      expect(await isolationOf(unscoped, 'public.knex_todos')).to.equal(null);
      expect(await knex('knex_migrations').count({ migrations: '*' })).to.deep.equal([{ migrations: '0' }]);
    } finally {
      await knex.destroy();
    }
  });

  it('runs TypeORM migrations up and down, and TypeORM creates uuid-ossp itself (on the allowlist)', async function () {
    const db = await p.newDatabase();
    const unscoped = await db.newCredential();
    class CreateTodos1767225600000 implements MigrationInterface {
      name = 'CreateTodos1767225600000';
      async up(runner: QueryRunner): Promise<void> {
        await runner.query(
          `CREATE TABLE "orm_todos" ("tenant_id" uuid NOT NULL REFERENCES "tenants" ("id"), "id" uuid NOT NULL DEFAULT uuid_generate_v4(), "title" text, CONSTRAINT "PK_orm_todos" PRIMARY KEY ("tenant_id", "id"))`,
        );
      }
      async down(runner: QueryRunner): Promise<void> {
        await runner.query(`DROP TABLE "orm_todos"`);
      }
    }
    // A generated uuid column makes TypeORM install uuid-ossp at initialize().
    const Todo = new EntitySchema({
      name: 'Todo',
      tableName: 'orm_todos',
      columns: {
        tenant_id: { type: 'uuid', primary: true },
        id: { type: 'uuid', primary: true, generated: 'uuid' },
        title: { type: 'text', nullable: true },
      },
    });
    const warnings: string[] = [];
    const source = new DataSource({
      type: 'postgres',
      ...connectionOf(unscoped),
      username: connectionOf(unscoped).user,
      entities: [Todo],
      migrations: [CreateTodos1767225600000],
      migrationsTransactionMode: 'all',
      logger: {
        logQuery: () => {},
        logQueryError: (error) => warnings.push(String(error)),
        logQuerySlow: () => {},
        logSchemaBuild: () => {},
        logMigration: () => {},
        log: (level, message) => {
          if (level === 'warn') warnings.push(String(message));
        },
      },
    });
    await source.initialize();
    try {
      expect((await source.query(`select extname from pg_extension where extname = 'uuid-ossp'`)).map((row: { extname: string }) => row.extname)).to.deep.equal(['uuid-ossp']);
      const ran = await source.runMigrations({ transaction: 'all' });
      expect(ran.map((migration) => migration.name)).to.deep.equal(['CreateTodos1767225600000']);
      expect(await isolationOf(unscoped, 'public.orm_todos')).to.deep.equal(ISOLATED);
      expect(await tenantViews(db, unscoped, 'orm_todos')).to.deep.equal(SEPARATE_VIEWS);
      // Through the entity, in a tenant's context: the generated id comes from uuid-ossp.
      const [tenant] = (await source.query(`select id from tenants where name = 'Tenant A'`)) as { id: string }[];
      const saved = await source.getRepository(Todo).save({ tenant_id: tenant.id, title: 'by the entity' });
      expect(saved.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);

      await source.undoLastMigration({ transaction: 'all' });
      expect(await isolationOf(unscoped, 'public.orm_todos')).to.equal(null);
      expect(await source.query('select count(*)::int as migrations from migrations')).to.deep.equal([{ migrations: 0 }]);
      expect(warnings).to.deep.equal([]);
    } finally {
      await source.destroy();
    }
  });

  describe('drizzle-kit', function () {
    let dir: string;

    before(function () {
      dir = mkdtempSync(join(tmpdir(), 'drizzle-'));
      // The schema file imports drizzle-orm: resolve it from the repository's packages.
      symlinkSync(resolve('node_modules'), join(dir, 'node_modules'), 'dir');
    });

    after(function () {
      rmSync(dir, { recursive: true, force: true });
    });

    /** Runs the drizzle-kit binary in `project` with its config file there, no terminal; answers its exit status and output. */
    async function drizzleKit(project: string, credential: TestCredential, args: string[]): Promise<{ status: number | null; output: string }> {
      const url = new URL(credential.connectionUrl);
      url.password = encodeURIComponent(credential.password);
      url.searchParams.set('sslmode', 'verify-full');
      url.searchParams.set('sslrootcert', p.caPath);
      const child = spawn(process.execPath, [resolve('node_modules/drizzle-kit/bin.cjs'), ...args, '--config', 'drizzle.config.ts'], {
        cwd: project,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, DRIZZLE_DATABASE_URL: url.toString(), NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
      child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
      const status = await new Promise<number | null>((done) => child.once('close', (code) => done(code)));
      return { status, output };
    }

    /** A drizzle project in a folder of its own: a config that reads the URL from the environment, and the schema file. */
    function writeProject(name: string, schema: string, tables: string[]): string {
      const project = mkdtempSync(join(dir, `${name}-`));
      symlinkSync(join(dir, 'node_modules'), join(project, 'node_modules'), 'dir');
      writeFileSync(join(project, 'schema.ts'), schema);
      writeFileSync(
        join(project, 'drizzle.config.ts'),
        `export default {
  dialect: 'postgresql',
  schema: './schema.ts',
  out: './migrations',
  dbCredentials: { url: process.env.DRIZZLE_DATABASE_URL },
  // The platform's built-in tenants table is not this schema's to manage.
  tablesFilter: ${JSON.stringify(tables)},
};
`,
      );
      return project;
    }

    const NOTES_SCHEMA = `import { pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';

export const notes = pgTable('drizzle_notes', {
  tenantId: uuid('tenant_id').notNull(),
  id: uuid('id').notNull().defaultRandom(),
  title: text('title'),
}, (table) => [primaryKey({ columns: [table.tenantId, table.id] })]);
`;

    it('generates SQL migrations from a schema file and migrates with them (CREATE SCHEMA "drizzle" first)', async function () {
      this.timeout(120_000);
      const db = await p.newDatabase();
      const unscoped = await db.newCredential();
      const project = writeProject('migrate', NOTES_SCHEMA, ['drizzle_notes']);
      const generated = await drizzleKit(project, unscoped, ['generate', '--name', 'notes']);
      expect(generated.status, generated.output).to.equal(0);
      const files = readdirSync(join(project, 'migrations')).filter((file) => file.endsWith('.sql'));
      expect(files).to.deep.equal(['0000_notes.sql']);
      expect(readFileSync(join(project, 'migrations', files[0]), 'utf8')).to.contain('CREATE TABLE "drizzle_notes"');

      const migrated = await drizzleKit(project, unscoped, ['migrate']);
      expect(migrated.status, migrated.output).to.equal(0);
      expect(migrated.output).to.not.match(/error/i);
      const journal = await withSession(unscoped, async (client) => (await client.query('select count(*)::int as applied from drizzle.__drizzle_migrations')).rows);
      expect(journal).to.deep.equal([{ applied: 1 }]);
      expect(await isolationOf(unscoped, 'public.drizzle_notes')).to.deep.equal(ISOLATED);
      expect(await tenantViews(db, unscoped, 'drizzle_notes')).to.deep.equal(SEPARATE_VIEWS);

      const again = await drizzleKit(project, unscoped, ['migrate']);
      expect(again.status, again.output).to.equal(0);
      expect(await withSession(unscoped, async (client) => (await client.query('select count(*)::int as applied from drizzle.__drizzle_migrations')).rows)).to.deep.equal([
        { applied: 1 },
      ]);
    });

    it('pushes a schema twice: both succeed, and the table stays isolated', async function () {
      this.timeout(120_000);
      const db = await p.newDatabase();
      const unscoped = await db.newCredential();
      const project = writeProject('push', NOTES_SCHEMA, ['drizzle_notes']);
      const first = await drizzleKit(project, unscoped, ['push', '--force', '--verbose']);
      expect(first.status, first.output).to.equal(0);
      expect(first.output).to.contain('CREATE TABLE "drizzle_notes"');
      expect(first.output).to.contain('[✓] Changes applied');
      expect(first.output).to.not.match(/error/i);
      expect(await isolationOf(unscoped, 'public.drizzle_notes')).to.deep.equal(ISOLATED);

      // The second push sees the platform's policies and row-level security, which the schema file
      // does not declare, and removes them: the data plane puts them back within each statement
      // (built-in schema step 14). drizzle-kit reports a failed statement on its output, exit 0.
      const second = await drizzleKit(project, unscoped, ['push', '--force', '--verbose']);
      expect(second.status, second.output).to.equal(0);
      for (const statement of [
        'ALTER TABLE "drizzle_notes" DISABLE ROW LEVEL SECURITY;',
        ...ISOLATED.policies.map((policy) => `DROP POLICY "${policy}" ON "drizzle_notes" CASCADE;`),
      ]) {
        expect(second.output).to.contain(statement);
      }
      expect(second.output).to.contain('[✓] Changes applied');
      expect(second.output).to.not.match(/error/i);
      expect(await isolationOf(unscoped, 'public.drizzle_notes')).to.deep.equal(ISOLATED);
      expect(await tenantViews(db, unscoped, 'drizzle_notes')).to.deep.equal(SEPARATE_VIEWS);
    });
  });
});
