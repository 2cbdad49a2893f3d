import { Migrator } from '@mikro-orm/migrations';
import { MikroORM, defineConfig } from '@mikro-orm/postgresql';
import { entities } from './entities/index.js';
import { migrationsList } from './migrations/index.js';

export { MikroORM };

export interface OrmOptions {
  databaseUrl: string;
  /** Connections this process may hold to the control plane. */
  poolSize?: number;
  debug?: boolean;
}

export function createOrmConfig(options: OrmOptions) {
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
    debug: options.debug ?? false,
    // Every unit of work runs in a forked EntityManager; touching the global one is a bug.
    allowGlobalContext: false,
    ensureDatabase: false,
  });
}

export function openOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(createOrmConfig(options));
}

/** Applies pending control-plane migrations; safe to run from several processes at once. */
export async function migrateControlPlane(orm: MikroORM): Promise<string[]> {
  const em = orm.em.fork();
  // A transaction-scoped advisory lock makes concurrent starters wait for the first one.
  return em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(7426001)');
    const applied = await orm.migrator.up();
    return applied.map((migration) => migration.name);
  });
}
