import type pg from 'pg';
import { BUILT_IN_SCHEMA_STEPS } from './built-in-schema.js';

/** Serialises built-in schema installs into one database across processes. */
const INSTALL_LOCK = 7426002;

/**
 * Brings a platform database's built-in schema up to date in one transaction: creates the
 * `platform` schema and its `schema_steps` record when missing, then applies and records each
 * step not yet recorded. Installs into one database wait for each other; a failing step leaves
 * nothing behind. `client` is connected to that database, as its owner or a superuser.
 *
 * `client` keeps the default search path (released steps may name objects unqualified), which is
 * safe only because a step first runs on a database with no customer objects yet; the installer's
 * own calls are qualified and typed anyway, as they run on populated databases too. The upgrade of
 * a READY database (the cluster driver's upgradeBuiltInSchema) must not rely on it: there a
 * customer's `public` function can outbid a built-in one and run as this superuser, so it connects
 * with `search_path = pg_catalog, pg_temp`, and steps from 5 on name every object with its schema.
 */
export async function installBuiltInSchema(client: pg.ClientBase): Promise<void> {
  await client.query('begin');
  try {
    await client.query('select pg_catalog.pg_advisory_xact_lock($1::bigint)', [INSTALL_LOCK]);
    await client.query(`create schema if not exists platform`);
    await client.query(`revoke all on schema platform from public`);
    await client.query(`create table if not exists platform.schema_steps (version int primary key, applied timestamptz not null default now())`);
    const done = await client.query<{ version: number }>('select version from platform.schema_steps');
    const applied = new Set(done.rows.map((row) => row.version));
    for (const step of BUILT_IN_SCHEMA_STEPS) {
      if (applied.has(step.version)) continue;
      await client.query(step.sql);
      await client.query('insert into platform.schema_steps (version) values ($1::int)', [step.version]);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

/** The newest built-in schema step recorded in the database (0 for none); fails where none was ever installed. */
export async function installedSchemaVersion(client: pg.ClientBase): Promise<number> {
  const result = await client.query<{ version: number | null }>('select pg_catalog.max(version) as version from platform.schema_steps');
  return result.rows[0]?.version ?? 0;
}
