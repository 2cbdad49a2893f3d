import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { MikroORM, defineConfig, type PostgreSqlConnection } from '@mikro-orm/postgresql';
import { honourDeadlines } from '@platform/deadline';
import { entities } from './entities/index.js';
import { endCheckouts, releaseLostClients } from './lost-connections.js';
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
/** Under the 8 s apps are given to stop (runService), with room for what closes after the control plane. */
const DEFAULT_CLOSE_GRACE_MS = 5_000;

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
    // accepts the socket and never answers (a frozen one). Both are bounded here, and a request's
    // checkouts and queries give up at its deadline (work outside one, migrations and the
    // reconcilers, is not cut). A client whose connection ends under its holder goes back at once
    // (a transaction's would otherwise stay checked out, and the ORM's close wait for it for ever).
    driverOptions: {
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      onPoolCreated: (pool: pg.Pool) => honourDeadlines(releaseLostClients(pool), 'a control-plane connection'),
    },
    debug: options.debug ?? false,
    // Every unit of work runs in a forked EntityManager; touching the global one is a bug.
    allowGlobalContext: false,
    ensureDatabase: false,
  });
}

export function openOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(ormConfig(options));
}

export interface CloseOptions {
  /** How long the close waits for clients still checked out before it ends their connections (default 5 s). */
  graceMs?: number;
  log: { error(details: object, message: string): void };
}

/**
 * Closes the ORM. A close waits for every client out of the pool; one still out after `graceMs`
 * has its connection ended (its holder's query fails) and is named in the log by its last
 * statement, so that a holder that never gives its client back cannot hold the process.
 */
export async function closeOrm(orm: MikroORM, { graceMs = DEFAULT_CLOSE_GRACE_MS, log }: CloseOptions): Promise<void> {
  const pool = await (orm.em.getConnection() as PostgreSqlConnection).getNativeClient();
  const closing = orm.close();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
  try {
    if ((await Promise.race([closing, late])) !== 'late') return;
  } finally {
    clearTimeout(timer);
  }
  const now = Date.now();
  for (const checkout of endCheckouts(pool)) {
    log.error({ heldMs: now - checkout.since, lastStatement: checkout.lastStatement }, `a control-plane connection was still checked out ${graceMs} ms into the close; ended`);
  }
  // The pool also waits for connections still being opened (up to their connect timeout): bounded too.
  const ended = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), CLOSE_AFTER_TAKE_BACK_MS)));
  try {
    if ((await Promise.race([closing, ended])) === 'late') {
      log.error({ waitedMs: graceMs + CLOSE_AFTER_TAKE_BACK_MS }, 'the control-plane pool had not closed after its clients were taken back (a connection still opening); left to the process’s exit');
    }
  } finally {
    clearTimeout(timer);
  }
}

/** How long the close waits for the pool once its checked-out clients were taken back. */
const CLOSE_AFTER_TAKE_BACK_MS = 1_000;

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
