import type pg from 'pg';
import { CREDENTIAL_ROLE_NAME } from '@platform/domain';
import { assertPhysicalName, DATABASE_ROLE_SUFFIXES } from './database-roles.js';

/**
 * What one credential's sessions may take from a shared cluster (README "Connecting to a database",
 * "What a credential may take"), set on each credential role with ALTER ROLE ... SET, so they hold
 * from the first statement of every session whatever client connects.
 */
export interface CredentialSessionLimits {
  /** temp_file_limit in KiB: the temporary files (sorts, hashes spilled to disk) one session may hold. Superuser-only: the role cannot raise it. */
  tempFileLimitKiB: number;
  /** lock_timeout in ms (0: off): how long a statement waits for a lock before it fails with 55P03. */
  lockTimeoutMs: number;
  /** idle_in_transaction_session_timeout in ms (0: off): a session idle inside a transaction that long is ended (25P03). */
  idleInTransactionTimeoutMs: number;
}

export interface DatabaseLimits {
  session: CredentialSessionLimits;
  /** Sessions one database may hold on a shared cluster (its CONNECTION LIMIT), the API's own service-role connections included. */
  maxConnections: number;
}

/**
 * Chosen so that ordinary work never meets them: 5 GiB of temporary files is far past any sort
 * an OLTP query makes (work_mem is 4 MB), yet a runaway one cannot fill the cluster's disk; 30 s
 * of waiting for a lock is longer than any migration should block others, and a statement that
 * waits longer holds up everyone queued behind it; 5 minutes idle inside a transaction is a
 * forgotten BEGIN, whose locks and snapshot hold back every other tenant's work and vacuum.
 * 100 sessions per database: a credential's own limit, and a tenth of the embedded server's 1000.
 */
export const DATABASE_LIMIT_DEFAULTS: DatabaseLimits = {
  session: { tempFileLimitKiB: 5 * 1024 * 1024, lockTimeoutMs: 30_000, idleInTransactionTimeoutMs: 5 * 60_000 },
  maxConnections: 100,
};

/** The settings, in the units PostgreSQL reads them in; whole numbers only, so they are safe to splice. */
function settingsOf(limits: CredentialSessionLimits): [string, string][] {
  const entries: [string, number][] = [
    ['temp_file_limit', limits.tempFileLimitKiB],
    ['lock_timeout', limits.lockTimeoutMs],
    ['idle_in_transaction_session_timeout', limits.idleInTransactionTimeoutMs],
  ];
  for (const [name, value] of entries) {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`refusing ${name} ${value}`);
  }
  return entries.map(([name, value]) => [name, String(value)]);
}

/** SQL: the ALTER ROLE statements that give `roleName` (a credential role) the limits. */
export function credentialLimitStatements(roleName: string, limits: CredentialSessionLimits): string[] {
  if (!CREDENTIAL_ROLE_NAME.test(roleName)) throw new Error(`refusing credential role name '${roleName}'`);
  return settingsOf(limits).map(([name, value]) => `alter role "${roleName}" set ${name} = ${value}`);
}

/**
 * Sets the database's CONNECTION LIMIT (-1: none). Unconditional: the mover pauses a database
 * with 0 and puts back the limit it read before. `admin` is a superuser connection to any
 * database of the cluster.
 */
export async function setDatabaseConnectionLimit(admin: pg.ClientBase, physicalName: string, limit: number): Promise<void> {
  assertPhysicalName(physicalName);
  if (!Number.isSafeInteger(limit) || limit < -1) throw new Error(`refusing connection limit ${limit}`);
  await underLimitsLock(admin, physicalName, () => admin.query(`alter database ${physicalName} connection limit ${limit}`));
}

/**
 * Whether the database accepts connections at all (ALLOW_CONNECTIONS): a deleted database refuses
 * every login, superusers' and the platform's own included, until it is restored. False when the
 * database does not exist (nothing to change). Under the limits' lock: it alters the same catalog
 * row as a connection limit.
 */
export async function setDatabaseAllowConnections(admin: pg.ClientBase, physicalName: string, allow: boolean): Promise<boolean> {
  assertPhysicalName(physicalName);
  return underLimitsLock(admin, physicalName, async () => {
    const found = await admin.query('select 1 from pg_catalog.pg_database where datname = $1', [physicalName]);
    if (!found.rowCount) return false;
    await admin.query(`alter database ${physicalName} allow_connections ${allow}`);
    return true;
  });
}

/** With an object's name, the advisory lock every change of its limits takes (any fixed number, apart from the installer's and the service login's). */
const LIMITS_LOCK = 7426004;

/**
 * Runs `change` in a transaction that first takes the lock of one role's or database's limits.
 * Two sessions that alter the same catalog row at once (two workers installing one database, a
 * start-up pass beside a move) otherwise fail with "tuple concurrently updated"; behind the lock
 * the second one changes the row after the first committed. One object at a time, so a pass over
 * the whole cluster holds no lock on what it is not changing.
 */
async function underLimitsLock<T>(admin: pg.ClientBase, object: string, change: () => Promise<T>): Promise<T> {
  await admin.query('begin');
  try {
    await admin.query('select pg_catalog.pg_advisory_xact_lock($1::int, pg_catalog.hashtext($2::text))', [LIMITS_LOCK, object]);
    const result = await change();
    await admin.query('commit');
    return result;
  } catch (error) {
    await admin.query('rollback').catch(() => {});
    throw error;
  }
}

/**
 * Brings the cluster's platform databases and credential roles to `limits`: each credential role
 * whose settings differ gets them, and each platform database (one with its `<db>_owner` role)
 * whose connection limit differs gets `maxConnections`, except a paused one (limit 0, a move
 * under way or done): the mover owns that value. `only`: that database and its credentials alone;
 * `connections: false` leaves connection limits alone (a dedicated server holds one database).
 * Cheap when nothing changed (two catalog reads), so it can run at every start-up. Answers how
 * many roles and databases it changed. `admin` is a superuser connection to the cluster.
 */
export async function applyDatabaseLimits(
  admin: pg.ClientBase,
  limits: DatabaseLimits,
  { only, connections = true }: { only?: string; connections?: boolean } = {},
): Promise<{ roles: number; databases: number }> {
  if (only !== undefined) assertPhysicalName(only);
  const wanted = settingsOf(limits.session).map(([name, value]) => `${name}=${value}`);
  const roles = await admin.query<{ rolname: string }>(
    `select r.rolname from pg_catalog.pg_roles r
      where r.rolname ~ $3::text
        and ($2::name is null or exists (
              select from pg_catalog.pg_auth_members m join pg_catalog.pg_roles g on g.oid = m.roleid
               where m.member = r.oid and g.rolname in ($2::name || '${DATABASE_ROLE_SUFFIXES.owner}', $2::name || '${DATABASE_ROLE_SUFFIXES.scoped}')))
        and not coalesce((select s.setconfig @> $1::text[] from pg_catalog.pg_db_role_setting s
                           where s.setrole = r.oid and s.setdatabase = 0), false)
      order by r.rolname`,
    [wanted, only ?? null, CREDENTIAL_ROLE_NAME.source],
  );
  for (const { rolname } of roles.rows) {
    await underLimitsLock(admin, rolname, () => admin.query(credentialLimitStatements(rolname, limits.session).join(';\n')));
  }
  if (!connections) return { roles: roles.rowCount ?? 0, databases: 0 };
  const databases = await admin.query<{ datname: string }>(
    `select d.datname from pg_catalog.pg_database d
      where ($2::name is null or d.datname = $2::name)
        and d.datconnlimit not in (0, $1::int)
        and exists (select from pg_catalog.pg_roles r where r.rolname = d.datname || '${DATABASE_ROLE_SUFFIXES.owner}')
      order by d.datname`,
    [limits.maxConnections, only ?? null],
  );
  for (const { datname } of databases.rows) {
    await underLimitsLock(admin, datname, () => setDatabaseConnectionLimitUnlessPaused(admin, datname, limits.maxConnections));
  }
  return { roles: roles.rowCount ?? 0, databases: databases.rowCount ?? 0 };
}

/**
 * The check and the change in one statement, so a pause the mover makes between our read and our
 * change is not undone: the DO block reads the catalog row as it is now, and the window left is
 * the few microseconds inside one statement.
 */
async function setDatabaseConnectionLimitUnlessPaused(admin: pg.ClientBase, physicalName: string, limit: number): Promise<void> {
  assertPhysicalName(physicalName);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`refusing connection limit ${limit}`);
  await admin.query(`
    do $limit$
    begin
      if (select datconnlimit from pg_catalog.pg_database where datname = '${physicalName}') <> 0 then
        alter database ${physicalName} connection limit ${limit};
      end if;
    end
    $limit$`);
}
