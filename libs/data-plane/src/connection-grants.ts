/**
 * Who gets a connection, as pure rules over counts: ConnectionBudget keeps the counts and carries
 * the decisions out (opening, closing, handing over), these decide. Each rule is one the README
 * states under "Connections to platform databases".
 */

/** The budget's limits that the rules read. */
export interface GrantLimits {
  connectionsPerCluster: number;
  connectionsPerDatabase: number;
  activePerCluster: number;
  openingPerCluster: number;
}

/** A database's side: connections it has in use or opening, idle ones, requests waiting. */
export interface DatabaseCounts {
  active: number;
  idle: number;
  waiting: number;
}

/** A cluster's side, all its databases together. */
export interface ClusterCounts {
  /** Open and being opened. */
  open: number;
  /** Checked out (opening ones not counted). */
  active: number;
  /** Logins under way. */
  opening: number;
}

/** An idle connection unused this long is at rest: it may close to make room for any database. */
export const RESTING_MS = 1_000;

/**
 * Whether a request may be served at once, without queueing: nobody of its database waits before
 * it (first come, first served), its database is under its own limit, and the cluster under its
 * limit of connections in use. Whether by reuse or by a new login is the next question.
 */
export function mayServeAtOnce(database: DatabaseCounts, cluster: ClusterCounts, limits: GrantLimits): boolean {
  return database.waiting === 0 && database.active < limits.connectionsPerDatabase && cluster.active < limits.activePerCluster;
}

/**
 * Whether a login may start for a database: a login slot is free, and there is room in the budget
 * (`room`), or the cluster's least recently used idle connection may close for it
 * (`close-oldest-idle`). It may close for a database holding no connection, whichever database it
 * belongs to; for one that holds some, only when that idle connection is at rest: a connection
 * idle between two requests of a busy database stays, or every request would close one and open
 * another. `oldestIdleSince` is when the cluster's least recently used idle connection was last
 * used (undefined: none is idle).
 */
export function roomToOpen(
  database: DatabaseCounts,
  cluster: ClusterCounts & { oldestIdleSince: number | undefined },
  limits: GrantLimits,
  now: number,
): 'room' | 'close-oldest-idle' | 'none' {
  if (cluster.opening >= limits.openingPerCluster) return 'none';
  if (cluster.open < limits.connectionsPerCluster) return 'room';
  if (cluster.oldestIdleSince === undefined) return 'none';
  const holdsNone = database.active === 0 && database.idle === 0;
  if (!holdsNone && cluster.oldestIdleSince > now - RESTING_MS) return 'none';
  return 'close-oldest-idle';
}

/**
 * Which waiting database is served next, when a connection or room is freed: first one that holds
 * no connection at all (so none in use starves); then one that can reuse an idle connection of its
 * own; then the one with the fewest in use. Skipped: databases at their own limit, and, while
 * every login slot is taken, those that would need a login. `waiting` in the order they began to
 * wait, `countsOf` reads each one's counts; answers undefined when none may be served.
 */
export function nextToServe<D>(waiting: Iterable<D>, countsOf: (database: D) => DatabaseCounts, cluster: ClusterCounts, limits: GrantLimits): D | undefined {
  if (cluster.active >= limits.activePerCluster) return undefined;
  const mayLogIn = cluster.opening < limits.openingPerCluster;
  let next: { database: D; counts: DatabaseCounts } | undefined;
  for (const database of waiting) {
    const counts = countsOf(database);
    if (counts.active >= limits.connectionsPerDatabase || (!mayLogIn && counts.idle === 0)) continue;
    if (counts.active === 0) return database;
    const reuses = counts.idle > 0;
    const nextReuses = next !== undefined && next.counts.idle > 0;
    if (!next || (reuses && !nextReuses) || (reuses === nextReuses && counts.active < next.counts.active)) next = { database, counts };
  }
  return next?.database;
}
