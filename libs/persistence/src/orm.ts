import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { MikroORM, defineConfig } from '@mikro-orm/postgresql';
import { beforeDeadline, cutQueriesAtDeadline } from '@platform/deadline';
import { entities } from './entities/index.js';
import { migrationsList } from './migrations/index.js';

export { MikroORM };

/** Serialises control-plane migrations across processes (a session advisory lock). */
const MIGRATION_LOCK = 7426001;

export interface OrmOptions {
  databaseUrl: string;
  /** Connections this process may hold to the control plane. */
  poolSize?: number;
  /** How long opening a connection, or waiting for one of the pool's, may take (default 10 s). */
  connectTimeoutMs?: number;
  debug?: boolean;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Puts a pool's work under the deadline of whoever asks (`@platform/deadline`): a checkout that
 * waits past it gives up (the connection, once free, goes back to the pool), and so does a query,
 * whose connection is destroyed rather than pooled. Work outside any deadline (migrations, the
 * reconcilers, insights housekeeping) is not cut.
 */
function honourDeadlines(pool: pg.Pool): void {
  pool.on('connect', (client) => cutQueriesAtDeadline(client));
  const connect = pool.connect.bind(pool) as (callback?: unknown) => Promise<pg.PoolClient> | undefined;
  // Only the promise form, the one the ORM's driver (kysely) uses, is bounded.
  pool.connect = ((callback?: unknown) =>
    callback ? connect(callback) : beforeDeadline('a control-plane connection', connect() as Promise<pg.PoolClient>, (client) => client.release())) as typeof pool.connect;
}

function ormConfig(options: OrmOptions) {
  return defineConfig({
    clientUrl: options.databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are written by hand and checked in; no schema snapshots on disk.
    migrations: {
      migrationsList,
      tableName: 'control_plane_migrations',
      transactional: true,
      allOrNothing: true,
      silent: true,
      snapshot: false,
      snapshotOnMigrate: false,
    },
    pool: { min: 0, max: options.poolSize ?? 10 },
    // pg waits for ever by default: for a connection from a full pool, and for a server that
    // accepts the socket and never answers (a frozen one). Both are bounded here.
    driverOptions: { connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, onPoolCreated: honourDeadlines },
    debug: options.debug ?? false,
    // Every unit of work runs in a forked EntityManager; touching the global one is a bug.
    allowGlobalContext: false,
    ensureDatabase: false,
  });
}

export function openOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(ormConfig(options));
}

/** Applies pending control-plane migrations; safe to run from several processes at once. */
export async function migrateControlPlane(orm: MikroORM): Promise<string[]> {
  // The lock is held by a connection of its own, outside the ORM's pool, so the migrator may use
  // the pool as it likes (even a pool of one) while concurrent starters wait here.
  const lock = new pg.Client({ connectionString: orm.config.get('clientUrl') });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await orm.migrator.up();
    return applied.map((migration) => migration.name);
  } finally {
    await lock.end();
  }
}
