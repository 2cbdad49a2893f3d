import pg from 'pg';

export interface DataPlanePoolOptions {
  /** Connections per database. */
  connectionsPerDatabase?: number;
  /** Open pools at most (exceeded only while every pool is busy); the least recently used idle one closes first. */
  maxPools?: number;
  /** A pool unused this long is closed. */
  idleMs?: number;
}

/**
 * Libpq options for every platform connection to a customer's database. Customers may create
 * functions and operators in `public`; the platform connects as a superuser, and an untyped
 * parameter can make a customer's overload the better match for a built-in name, which would run
 * it with the platform's rights. pg_catalog alone (pg_temp last, as PostgreSQL advises) means no
 * customer object answers to an unqualified name, so the platform's SQL names tables with schemas.
 */
export const PINNED_SEARCH_PATH_OPTIONS = '-c search_path=pg_catalog,pg_temp';

interface Entry {
  pool: pg.Pool;
  lastUsed: number;
}

/**
 * One small pg pool per active platform database, bounded in number: a platform with thousands of
 * databases holds connections only to the ones in use. Idle pools close after `idleMs`.
 */
export class DataPlanePools {
  private readonly pools = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: DataPlanePoolOptions = {}) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(this.idleMs, 30_000));
    this.sweeper.unref();
  }

  private get idleMs(): number {
    return this.options.idleMs ?? 60_000;
  }

  pool(url: string): pg.Pool {
    const now = Date.now();
    let entry = this.pools.get(url);
    if (entry) {
      // Map order is recency order: move to the end.
      this.pools.delete(url);
    } else {
      const pool = new pg.Pool({
        connectionString: url,
        options: PINNED_SEARCH_PATH_OPTIONS,
        max: this.options.connectionsPerDatabase ?? 4,
        // Connections give themselves back soon, and waiting for one is bounded (then 503).
        idleTimeoutMillis: 10_000,
        connectionTimeoutMillis: 10_000,
      });
      pool.on('error', () => {});
      entry = { pool, lastUsed: now };
      this.evictOverflow();
    }
    entry.lastUsed = now;
    this.pools.set(url, entry);
    return entry.pool;
  }

  get size(): number {
    return this.pools.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.pools].map(([url, entry]) => this.end(url, entry)));
  }

  /**
   * Closes least recently used pools beyond the limit, but only idle ones: a pool with queries
   * in flight or waiting stays (the limit is exceeded for a moment rather than a request broken).
   */
  private evictOverflow(): void {
    const max = this.options.maxPools ?? 50;
    for (const [url, entry] of this.pools) {
      if (this.pools.size < max) break;
      if (isIdle(entry.pool)) this.end(url, entry);
    }
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [url, entry] of [...this.pools]) {
      if (entry.lastUsed < cutoff && isIdle(entry.pool)) this.end(url, entry);
    }
  }

  /** Ends a pool once, and only while it is still the one registered for its URL. */
  private end(url: string, entry: Entry): Promise<void> {
    if (this.pools.get(url) !== entry) return Promise.resolve();
    this.pools.delete(url);
    return entry.pool.end().catch(() => {});
  }
}

function isIdle(pool: pg.Pool): boolean {
  return pool.waitingCount === 0 && pool.totalCount === pool.idleCount;
}
