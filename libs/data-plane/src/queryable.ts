import pg from 'pg';
import { NotFoundError, UnavailableError } from '@platform/domain';
import { DATABASE_ROLE_SUFFIXES } from './database-roles.js';
import { TENANT_CONTEXT_SETTING } from './tenant-context.js';

/** What the repositories need of a pool. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
  connect(): Promise<pg.PoolClient>;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const { code, constraint: name } = error as { code?: string; constraint?: string };
  return code === '23505' && (constraint === undefined || name === constraint);
}

/**
 * A database refusing connections (ALLOW_CONNECTIONS false: deleted, restorable) turns a login away
 * with 55000 at FATAL severity, from the routine that checks the database at login; 55000 of a
 * statement is an ERROR of the SQL instead. The routine's name is never translated, the severity
 * may be (lc_messages).
 */
function isClosedDatabase(error: unknown): boolean {
  const { code, severity, routine } = error as { code?: string; severity?: string; routine?: string };
  return code === '55000' && (severity === 'FATAL' || routine === 'CheckMyDatabase');
}

/**
 * A database dropped while a cached path still led to it answers as a missing one, and so does a
 * deleted one (closed to connections until it is restored or dropped); a server out
 * of connections as busy (503) rather than broken (the budget's own waits say so themselves). A
 * database moving between servers refuses sessions with the same code (its connection limit is 0
 * for the copy), so the message names both.
 */
function translate(error: unknown): never {
  const { code } = error as { code?: string };
  if (code === '3D000' || isClosedDatabase(error)) throw new NotFoundError('database_not_found', 'Database not found');
  if (code === '53300') {
    throw new UnavailableError('database_busy', 'The database is at its connection limit, or moving to another server; try again shortly', { cause: error });
  }
  throw error;
}

/** The login itself was refused: the role is missing, may not log in, or has another password. */
function isLoginRefused(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === '28P01' || code === '28000';
}

/**
 * A built-in table is missing: the database was built by an older release (before the step that
 * adds it). Only the platform's own schemas count; a customer's missing table is their error.
 */
function isBuiltInObjectMissing(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  // The relation's name, not the words around it (those follow lc_messages).
  if (code === '42P01') return /\b(auth|users|platform)\.[a-z_]+/.test(message ?? '');
  // Or a column a later step added to a built-in table.
  return code === '42703' && BUILT_IN_COLUMNS_ADDED.some((column) => message?.includes(column));
}

/** Columns that steps after a table's own added to it (step 8: users.tenant_users.user_created). */
const BUILT_IN_COLUMNS_ADDED = ['user_created'];

/**
 * A database's connections as the repositories use them, with the errors above translated. A
 * refused login (a database built before its login role existed), or a built-in table or column
 * missing (a database built before the step that adds it), is handed to `repairLogin`, which
 * brings the database up to date, and tried once more.
 */
export function queryableOf(pool: Queryable, repairLogin?: () => Promise<void>): Queryable {
  const withRepair = async <T>(attempt: () => Promise<T>): Promise<T> => {
    try {
      return await attempt();
    } catch (error) {
      if (!repairLogin || !(isLoginRefused(error) || isBuiltInObjectMissing(error))) throw error;
    }
    await repairLogin();
    return attempt();
  };
  return {
    query: <R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]) =>
      withRepair(() => pool.query<R>(text, values)).catch(translate),
    connect: () => withRepair(() => pool.connect()).catch(translate),
  };
}

export async function inTransaction<T>(pool: Queryable, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Runs `fn` in one tenant's context: as the database's tenant role, which row-level security
 * applies to, with the tenant setting set for this transaction only (SET LOCAL, like the role),
 * so a pooled connection never carries either into its next use. The role is named after the
 * database the connection is to, so the server derives it.
 */
export async function inTenantContext<T>(pool: Queryable, tenantId: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(pool, async (client) => {
    await client.query(`select set_config('role', current_database() || '${DATABASE_ROLE_SUFFIXES.tenant}', true)`);
    await client.query('select set_config($1::text, $2::text, true)', [TENANT_CONTEXT_SETTING, tenantId]);
    return fn(client);
  });
}
