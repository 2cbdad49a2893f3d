/** Setup shared by this library's tests against real PostgreSQL; it declares no tests of its own. */
import { createScratchDatabase, dropScratchDatabase, type ScratchDatabase, type TestPostgres } from '@platform/testing';
import { migrateControlPlane, openOrm, type MikroORM } from './orm.js';

export interface ScratchControlPlane extends ScratchDatabase {
  orm: MikroORM;
  /** Closes the ORM and drops the database. */
  close(): Promise<void>;
}

/** A migrated control plane in a scratch database of its own. */
export async function createScratchControlPlane(server: TestPostgres): Promise<ScratchControlPlane> {
  const database = await createScratchDatabase(server, 'cp');
  const orm = await openOrm({ databaseUrl: database.url, poolSize: 6 });
  const close = async () => {
    await orm.close();
    await dropScratchDatabase(server, database.name);
  };
  try {
    await migrateControlPlane(orm);
  } catch (error) {
    await close();
    throw error;
  }
  return { ...database, orm, close };
}
