// How many server sessions one pool of the pooled endpoint may hold (README "Pooled endpoint"): a
// share of the sessions its login may hold on its server, so that a pool never takes what the
// same credential's direct sessions need, and never more than the server would let it open.

/** What a pool's size follows: the operator's setting and the processes that share every pool. */
export interface PoolSizing {
  /** GATEWAY_POOL_SIZE: that many per pool, but never above the pool's connection limit; null (unset): a fifth of the limit. */
  size: number | null;
  /** The processes serving the pooled port (GATEWAY_WORKERS): each holds its share of a pool's size. */
  workers: number;
}

/** The share of a connection limit a pool takes when GATEWAY_POOL_SIZE is not set: a fifth. */
export const POOL_SHARE_OF_LIMIT = 5;
/** A pool's size when neither the setting nor a limit says (a server with no connection limit for the login). */
export const POOL_SIZE_WITHOUT_LIMIT = 20;

/**
 * The server sessions a login's pool may hold: the setting, or a fifth of `connectionLimit`; never
 * above the limit, at least 1; then divided among the workers (rounded down, at least 1), so that
 * the workers together hold no more than one pool's size, except where that size is below the
 * number of workers: each still holds one (README "Pooled endpoint"). `connectionLimit` null: none is known.
 */
export function poolSize(sizing: PoolSizing, connectionLimit: number | null): number {
  let size: number;
  if (connectionLimit === null) size = sizing.size ?? POOL_SIZE_WITHOUT_LIMIT;
  else if (sizing.size === null) size = Math.floor(connectionLimit / POOL_SHARE_OF_LIMIT);
  else size = Math.min(sizing.size, connectionLimit);
  return Math.max(1, Math.floor(Math.max(1, size) / sizing.workers));
}

/**
 * The sessions a credential's logins may hold on a shared cluster: the smaller of its database's
 * CONNECTION LIMIT (`pg_database.datconnlimit`) and its role's (`pg_roles.rolconnlimit`), either
 * of which PostgreSQL enforces; -1 is PostgreSQL's "no limit". Null when neither has one.
 */
export function sessionLimit(databaseLimit: number | null, roleLimit: number | null): number | null {
  const limits = [databaseLimit, roleLimit].filter((limit): limit is number => limit !== null && limit >= 0);
  return limits.length === 0 ? null : Math.min(...limits);
}
