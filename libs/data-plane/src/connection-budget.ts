import { availableParallelism } from 'node:os';
import pg from 'pg';
import { beforeDeadline, cutQueriesAtDeadline } from '@platform/deadline';
import { UnavailableError } from '@platform/domain';
import { PeriodicWork } from '@platform/process';
import { mayServeAtOnce, nextToServe, roomToOpen, type DatabaseCounts } from './connection-grants.js';
import type { Queryable } from './queryable.js';
import { PINNED_SEARCH_PATH_OPTIONS } from './search-path.js';
import { DATA_PLANE_TYPES } from './timestamp-parser.js';

export interface ConnectionBudgetOptions {
  /** Connections to one cluster (all its databases together) open at most, connecting ones included. */
  connectionsPerCluster?: number;
  /** Connections to one database at most: its concurrency limit; more of its requests queue. */
  connectionsPerDatabase?: number;
  /**
   * Connections to one cluster in use at once (checked out; opening ones are not counted), all
   * databases together; further requests wait in their databases' queues. PostgreSQL runs a few
   * busy backends faster than many: the same load spread over 100 databases ran at 0.56x of one
   * database's throughput with no such cap, 0.84x with 8 (bench:scale, 2 cores).
   */
  activePerCluster?: number;
  /**
   * Connections to one cluster being opened at once (logins under way), all databases together;
   * requests that need a new connection wait their turn in their databases' queues. A login is a
   * backend start, tens of ms of the server's CPU on 2 cores: a cold burst of 200 at once took each
   * of them past the 10 s connect timeout, where a few at a time finish one after another.
   */
  openingPerCluster?: number;
  /** Requests that may wait for one database's connection; one more is answered busy at once. */
  queuePerDatabase?: number;
  /** How long a request waits in its database's queue before it is answered busy. */
  waitMs?: number;
  /** A connection unused this long is closed (one by one, not a database at a time). */
  idleMs?: number;
  /** How long opening one connection may take. */
  connectTimeoutMs?: number;
}

export const CONNECTION_BUDGET_DEFAULTS = {
  connectionsPerCluster: 600,
  connectionsPerDatabase: 4,
  activePerCluster: Math.max(8, 4 * availableParallelism()),
  openingPerCluster: Math.max(4, 2 * availableParallelism()),
  queuePerDatabase: 1000,
  waitMs: 5_000,
  // Long enough to hold a working set read in turns: reading 500 databases once each took 30-40 s
  // (bench:scale), so at 30 s the first ones had closed before the last opened, and every read of a
  // 500-database spread opened a connection again (a backend start: 30-50 ms of CPU on 2 cores).
  // The budget still closes the least recently used idle ones first when it needs room.
  idleMs: 300_000,
  connectTimeoutMs: 10_000,
} satisfies Required<ConnectionBudgetOptions>;

/**
 * Where a connection is in its life. Every count the budget keeps follows from these states, and
 * one method (`enter`) moves a connection between them and keeps the counts.
 *   - `new`: made, not counted yet;
 *   - `opening`: its login is under way (counts against the budget and the database's limit);
 *   - `active`: checked out by a request;
 *   - `idle`: open and unused, on its database's stack and the cluster's least-recently-used list;
 *   - `closed`: ended, or being ended; it counts nowhere.
 */
type ConnectionState = 'new' | 'opening' | 'active' | 'idle' | 'closed';

interface Connection {
  readonly client: pg.Client & { release(error?: unknown): void };
  readonly database: DatabaseLine;
  state: ConnectionState;
  idleSince: number;
  /** The server or the socket ended it: it is closed when given back, never reused. */
  broken: boolean;
}

interface Waiter {
  resolve(connection: Connection): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

/** One database's side of its cluster's budget: idle connections (last used on top), and its queue. */
interface DatabaseLine {
  readonly url: string;
  readonly cluster: ClusterBudget;
  readonly idle: Connection[];
  /** In state `active` or `opening`. */
  active: number;
  readonly waiters: Waiter[];
}

interface ClusterBudget {
  /** Open and being opened (not closed), every database of the cluster together. */
  open: number;
  /** In state `active`, every database together. */
  active: number;
  /** In state `opening` (logins under way), every database together. */
  opening: number;
  /** Every idle connection of the cluster, least recently used first (a Set keeps insertion order). */
  readonly idle: Set<Connection>;
  /** Databases with requests waiting. */
  readonly waiting: Set<DatabaseLine>;
}

/** 503: busy when the database's share of the budget is taken (its connection limit here), else unavailable. */
function refused(code: 'database_busy' | 'database_unavailable', why: string): UnavailableError {
  return new UnavailableError(code, `The database is ${code === 'database_busy' ? 'at its connection limit' : 'unavailable'} (${why}); try again shortly`);
}

/**
 * The API's connections to platform databases, under one budget per cluster that is a hard cap:
 * never more than `connectionsPerCluster` open to a cluster, whatever the load. Connections are
 * kept per database and reused while the working set fits. When it does not, the least recently
 * used idle connection of the cluster is closed to open one for the database that needs it, one
 * connection at a time, so a database in steady use keeps its connections.
 *
 * Fairness: a database holds at most `connectionsPerDatabase` connections; its further requests
 * wait in its own first-come queue (at most `queuePerDatabase` of them, each at most `waitMs`, then
 * 503 `database_busy`). With the budget spent, a waiting database that holds no connection gets
 * the next one freed anywhere in the cluster, so no database in use is starved by others.
 */
export class ConnectionBudget {
  private readonly settings: Required<ConnectionBudgetOptions>;
  private readonly clusters = new Map<string, ClusterBudget>();
  private readonly databases = new Map<string, DatabaseLine>();
  private readonly sweeper: PeriodicWork;
  private closed = false;

  constructor(options: ConnectionBudgetOptions = {}) {
    this.settings = { ...CONNECTION_BUDGET_DEFAULTS, ...definedOnly(options) };
    this.sweeper = new PeriodicWork(() => this.closeIdle(), {
      intervalMs: Math.min(this.settings.idleMs, 5_000),
      firstPass: 'after-interval',
      // The sweep only closes connections it holds: a failure there is a bug, told the way Node tells one.
      onError: (error) => process.emitWarning(error as Error),
    });
    this.sweeper.start();
  }

  /** The database at `url` (its credentials included) as the repositories query it. */
  queryable(url: string): Queryable {
    return {
      query: async <R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]) => {
        const connection = await this.acquireBeforeDeadline(url);
        try {
          const result = typeof text === 'string' ? await connection.client.query<R>(text, values) : await connection.client.query<R>(text);
          this.release(connection);
          return result;
        } catch (error) {
          this.release(connection, error);
          throw error;
        }
      },
      connect: async () => (await this.acquireBeforeDeadline(url)).client,
    };
  }

  /**
   * A connection, given up at the deadline of the request that waits (`@platform/deadline`); one
   * that comes later goes back to the budget. Its queries give up at that deadline too.
   */
  private acquireBeforeDeadline(url: string): Promise<Connection> {
    return beforeDeadline('a database connection', this.acquire(url), (late) => this.release(late));
  }

  /** Connections open (or opening) to the cluster of `url`, and how many of them are idle. */
  usage(url: string): { open: number; idle: number; waiting: number } {
    const cluster = this.clusters.get(clusterKey(url));
    if (!cluster) return { open: 0, idle: 0, waiting: 0 };
    let waiting = 0;
    for (const line of cluster.waiting) waiting += line.waiters.length;
    return { open: cluster.open, idle: cluster.idle.size, waiting };
  }

  async close(): Promise<void> {
    this.closed = true;
    const ending: Promise<void>[] = [this.sweeper.stop()];
    for (const cluster of this.clusters.values()) {
      for (const line of cluster.waiting) for (const waiter of line.waiters.splice(0)) this.abandon(waiter, refused('database_unavailable', 'the platform is stopping'));
      cluster.waiting.clear();
      for (const connection of [...cluster.idle]) ending.push(this.discard(connection));
    }
    await Promise.all(ending);
  }

  private line(url: string): DatabaseLine {
    let line = this.databases.get(url);
    if (!line) {
      const key = clusterKey(url);
      let cluster = this.clusters.get(key);
      if (!cluster) {
        cluster = { open: 0, active: 0, opening: 0, idle: new Set(), waiting: new Set() };
        this.clusters.set(key, cluster);
      }
      line = { url, cluster, idle: [], active: 0, waiters: [] };
      this.databases.set(url, line);
    }
    return line;
  }

  private acquire(url: string): Promise<Connection> {
    if (this.closed) return Promise.reject(refused('database_unavailable', 'the platform is stopping'));
    const line = this.line(url);
    // Nobody of this database waits before us (first come, first served), and it is under its limit.
    if (mayServeAtOnce(countsOf(line), line.cluster, this.settings)) {
      const idle = this.takeIdle(line);
      if (idle) return Promise.resolve(idle);
      if (this.mayOpen(line)) return this.open(line);
    }
    if (line.waiters.length >= this.settings.queuePerDatabase) return Promise.reject(refused('database_busy', 'too many requests waiting for it'));
    return new Promise<Connection>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const at = line.waiters.indexOf(waiter);
          if (at >= 0) line.waiters.splice(at, 1);
          if (line.waiters.length === 0) line.cluster.waiting.delete(line);
          reject(refused('database_busy', `no connection free within ${this.settings.waitMs} ms`));
        }, this.settings.waitMs),
      };
      line.waiters.push(waiter);
      line.cluster.waiting.add(line);
    });
  }

  /** The database's most recently used idle connection, checked out. */
  private takeIdle(line: DatabaseLine): Connection | undefined {
    const connection = line.idle[line.idle.length - 1];
    if (!connection) return undefined;
    this.enter(connection, 'active');
    return connection;
  }

  /** Moves a connection to `to`, keeping every count; a connection leaves `closed` never. */
  private enter(connection: Connection, to: ConnectionState): void {
    const from = connection.state;
    if (from === to || from === 'closed') return;
    const { database: line } = connection;
    const { cluster } = line;
    if (from === 'new') cluster.open += 1;
    else if (from === 'opening') cluster.opening -= 1;
    else if (from === 'active') cluster.active -= 1;
    else {
      // The most recently used is on top: taking it is a pop, closing an older one a splice.
      const at = line.idle.lastIndexOf(connection);
      if (at === line.idle.length - 1) line.idle.pop();
      else if (at >= 0) line.idle.splice(at, 1);
      cluster.idle.delete(connection);
    }
    if (from === 'opening' || from === 'active') line.active -= 1;
    if (to === 'opening') cluster.opening += 1;
    else if (to === 'active') cluster.active += 1;
    else if (to === 'idle') {
      connection.idleSince = Date.now();
      line.idle.push(connection);
      cluster.idle.add(connection);
    } else if (to === 'closed') cluster.open -= 1;
    if (to === 'opening' || to === 'active') line.active += 1;
    connection.state = to;
  }

  /** Whether a login may start now for `line` (see roomToOpen), the oldest idle connection closed for it if need be. */
  private mayOpen(line: DatabaseLine): boolean {
    const { cluster } = line;
    const oldest = cluster.idle.values().next();
    const room = roomToOpen(countsOf(line), { ...cluster, oldestIdleSince: oldest.done ? undefined : oldest.value.idleSince }, this.settings, Date.now());
    if (room === 'close-oldest-idle' && !oldest.done) void this.discard(oldest.value);
    return room !== 'none';
  }

  /** Opens a connection for `line`, counted against the budget from now on. */
  private async open(line: DatabaseLine): Promise<Connection> {
    const client = new pg.Client({
      connectionString: line.url,
      options: PINNED_SEARCH_PATH_OPTIONS,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      types: DATA_PLANE_TYPES,
    });
    const connection: Connection = {
      client: Object.assign(client, { release: (error?: unknown) => this.release(connection, error) }),
      database: line,
      state: 'new',
      idleSince: 0,
      broken: false,
    };
    // A query cut by its request's deadline ends the connection; it is broken from that moment, before
    // its request (in the same promise chain) releases it, so that no waiting request is handed it.
    cutQueriesAtDeadline(client, {
      onCut: () => {
        connection.broken = true;
      },
    });
    // Counted against the budget and its database's limit from now on.
    this.enter(connection, 'opening');
    // A connection lost while idle leaves the idle list at once; one in use is closed on release.
    const lost = () => {
      connection.broken = true;
      if (connection.state !== 'idle') return;
      void this.discard(connection);
      this.serveWaiting(line.cluster);
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
    } catch (error) {
      this.enter(connection, 'closed');
      client.end().catch(() => {});
      this.serveWaiting(line.cluster);
      // A server that did not finish a login in time (too loaded, or frozen) is not broken: 503, to be tried again.
      if (isConnectTimeout(error)) throw Object.assign(refused('database_unavailable', `the server did not finish a login within ${this.settings.connectTimeoutMs} ms`), { cause: error });
      throw error;
    }
    // In use from now on: opening does not count against activePerCluster, or opening connections
    // (most of the work when the databases in use outnumber the budget) would run a few at a time.
    this.enter(connection, 'active');
    // A login slot is free: a request waiting for one may start its own.
    this.serveWaiting(line.cluster);
    return connection;
  }

  private release(connection: Connection, error?: unknown): void {
    if (connection.state !== 'active') return;
    const { database: line } = connection;
    // An error of the connection itself (not of the SQL) leaves it unusable.
    if (connection.broken || this.closed || (error !== undefined && isConnectionError(error))) void this.discard(connection);
    else this.enter(connection, 'idle');
    this.serveWaiting(line.cluster);
  }

  /** Closes a connection that is idle, or given back unusable, and frees its place; once. */
  private discard(connection: Connection): Promise<void> {
    if (connection.state === 'closed' || connection.state === 'opening') return Promise.resolve();
    const { database: line } = connection;
    this.enter(connection, 'closed');
    // A database with nothing open or waiting is forgotten (a dropped one would otherwise stay).
    if (line.active === 0 && line.idle.length === 0 && line.waiters.length === 0) this.databases.delete(line.url);
    return connection.client.end().catch(() => {});
  }

  /** Gives freed connections and room to waiting requests, in the order nextToServe says. */
  private serveWaiting(cluster: ClusterBudget): void {
    for (;;) {
      const next = nextToServe(cluster.waiting, countsOf, cluster, this.settings);
      if (!next) return;
      const idle = this.takeIdle(next);
      if (!idle && !this.mayOpen(next)) return;
      const waiter = next.waiters.shift()!;
      if (next.waiters.length === 0) cluster.waiting.delete(next);
      clearTimeout(waiter.timer);
      if (idle) waiter.resolve(idle);
      else this.open(next).then(waiter.resolve, waiter.reject);
    }
  }

  private abandon(waiter: Waiter, error: unknown): void {
    clearTimeout(waiter.timer);
    waiter.reject(error);
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.settings.idleMs;
    for (const cluster of this.clusters.values()) {
      // Least recently used first: the first one used after the cutoff ends the sweep.
      for (const connection of cluster.idle) {
        if (connection.idleSince > cutoff) break;
        void this.discard(connection);
      }
    }
  }
}

/** What the grant rules read of a database's side. */
function countsOf(line: DatabaseLine): DatabaseCounts {
  return { active: line.active, idle: line.idle.length, waiting: line.waiters.length };
}

function clusterKey(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port || '5432'}`;
}

/** pg's own words when connectionTimeoutMillis runs out (before or during the login). */
function isConnectTimeout(error: unknown): boolean {
  const { message } = error as { message?: unknown };
  return message === 'timeout expired' || message === 'Connection terminated due to connection timeout';
}

/** Errors of the connection rather than of the statement: no SQLSTATE, or class 08 / 57P0x. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code !== 'string' || /^(08|57P0)/.test(code) || !/^[0-9A-Z]{5}$/.test(code);
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
