/**
 * Setup shared by this library's integration tests; it declares no tests of its own.
 *
 * Persistence cannot import @platform/testing: that library depends on persistence, and the
 * project cycle would break Nx's task graph (`build` depends on `^build`). So this mirrors
 * startTestPostgres / createScratchDatabase with the library's own embedded server.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { maintenanceUrl } from '@platform/config';
import { systemClock, type Clock } from '@platform/domain';
import { startEmbeddedPostgres } from '@platform/postgres-launcher';
import { migrateControlPlane, openOrm, type MikroORM } from './orm.js';

export interface TestServer {
  adminUrl: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
}

/** A free TCP port on loopback, chosen by the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** A temporary folder the `postgres` user can enter (tests may run as root). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** DATABASE_URL's server when set, else a fresh embedded server on a free port. */
export async function startServer(env: NodeJS.ProcessEnv = process.env): Promise<TestServer> {
  if (env.DATABASE_URL) {
    const adminUrl = maintenanceUrl(env.DATABASE_URL);
    return { adminUrl, urlFor: (database) => withDatabase(adminUrl, database), stop: async () => {} };
  }
  const dir = tempDir('persistence-test-pg-');
  const server = await startEmbeddedPostgres({ dir, port: await freePort() });
  return {
    adminUrl: server.url('postgres'),
    urlFor: (database) => server.url(database),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function query<R extends pg.QueryResultRow = any>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  return withClient(url, async (client) => (await client.query<R>(sql, params)).rows);
}

export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** An empty database with a unique name, so that no test sees another's rows. */
export async function createScratchDatabase(server: TestServer, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await withClient(server.adminUrl, (client) => client.query(`create database ${client.escapeIdentifier(name)}`));
  return {
    name,
    url: server.urlFor(name),
    async drop() {
      await withClient(server.adminUrl, (client) => client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`));
      removeMigrationSnapshot(name);
    },
  };
}

/**
 * The migrator writes `.snapshot-<database>.json` into the working directory after applying
 * migrations (MikroORM's snapshotOnMigrate); remove the one a scratch database left behind.
 */
export function removeMigrationSnapshot(database: string): void {
  rmSync(resolve(`.snapshot-${database}.json`), { force: true });
}

export interface ScratchControlPlane extends ScratchDatabase {
  orm: MikroORM;
  /** Closes the ORM and drops the database. */
  close(): Promise<void>;
}

/** A migrated control plane in a scratch database of its own. */
export async function createScratchControlPlane(server: TestServer): Promise<ScratchControlPlane> {
  const database = await createScratchDatabase(server, 'cp');
  const orm = await openOrm({ databaseUrl: database.url, poolSize: 6 });
  try {
    await migrateControlPlane(orm);
  } catch (error) {
    await orm.close();
    await database.drop();
    throw error;
  }
  return {
    ...database,
    orm,
    async close() {
      await orm.close();
      await database.drop();
    },
  };
}

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  private current: number;

  constructor(start: Date = systemClock.now()) {
    this.current = start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

/** A promise with its resolver, for callbacks a test wants to hold and release. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolveIt!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolveIt = res;
  });
  return { promise, resolve: resolveIt };
}

/** Polls until `check` returns a value, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((wake) => setTimeout(wake, 25));
  }
}
