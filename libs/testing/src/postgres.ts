import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { databaseUrl, maintenanceUrl, readExtensionsDir } from '@platform/config';
import { freePort, MANY_DATABASES_SETTINGS, scratchDir, startEmbeddedPostgres } from '@platform/postgres-launcher';

export { freePort, scratchDir } from '@platform/postgres-launcher';

export interface TestPostgres {
  /** A superuser URL of the server's maintenance database. */
  adminUrl: string;
  /** A URL of another database on the same server. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

/**
 * The PostgreSQL server tests run against: the one DATABASE_URL names, or else a fresh embedded
 * server in a temporary folder on a free port, removed when stopped, with the extensions of
 * PG_EXTENSIONS_DIR (default .data/pg-extensions-18 of the working folder) as the platform's own.
 */
export async function startTestPostgres(env: NodeJS.ProcessEnv = process.env): Promise<TestPostgres> {
  if (env.DATABASE_URL) {
    const adminUrl = maintenanceUrl(env.DATABASE_URL);
    return { adminUrl, urlFor: (database) => databaseUrl(adminUrl, database), stop: async () => {} };
  }
  const dir = scratchDir('platform-test-pg-');
  const server = await startEmbeddedPostgres({ dir, port: await freePort(), settings: MANY_DATABASES_SETTINGS, extensionsDir: readExtensionsDir(env) });
  return {
    adminUrl: server.url('postgres'),
    urlFor: (database) => server.url(database),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` with a client of its own on the database `url` names, closed afterwards. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The rows of one statement, run on a connection of its own. */
export async function query<R extends pg.QueryResultRow = any>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  return withClient(url, async (client) => (await client.query<R>(sql, params)).rows);
}

export interface ScratchDatabase {
  name: string;
  /** A superuser URL of the database. */
  url: string;
}

/** Creates an empty database with a unique name, e.g. a control plane of its own for one test. */
export async function createScratchDatabase(server: TestPostgres, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await withClient(server.adminUrl, (client) => client.query(`create database ${client.escapeIdentifier(name)}`));
  return { name, url: server.urlFor(name) };
}

/** Drops a scratch database, ending the sessions still connected to it. */
export async function dropScratchDatabase(server: TestPostgres, name: string): Promise<void> {
  await withClient(server.adminUrl, (client) => client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`));
}

export async function databaseExists(adminUrl: string, name: string): Promise<boolean> {
  return withClient(adminUrl, async (client) => {
    const result = await client.query('select 1 from pg_database where datname = $1', [name]);
    return (result.rowCount ?? 0) > 0;
  });
}
