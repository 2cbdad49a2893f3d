import pg from 'pg';

export interface DataPlanePoolOptions {
  /** Connections per database. */
  connectionsPerDatabase?: number;
  /** Open pools at most; the least recently used idle one closes first. */
  maxPools?: number;
  /** A pool unused this long is closed. */
  idleMs?: number;
}

interface Entry {
  pool: pg.Pool;
  lastUsed: number;
}

/**
 * One small pg pool per active platform database, bounded in number: a platform with thousands of
 * databases holds connections only to the ones in use.
 */
export class DataPlanePools {
  private readonly pools = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: DataPlanePoolOptions = {}) {
    this.sweeper = setInterval(() => void this.closeIdle(), Math.min(this.idleMs, 30_000));
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
      const pool = new pg.Pool({ connectionString: url, max: this.options.connectionsPerDatabase ?? 5, idleTimeoutMillis: 30_000 });
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

  /** Closes a database's pool, e.g. before it is dropped. */
  async forget(url: string): Promise<void> {
    const entry = this.pools.get(url);
    if (!entry) return;
    this.pools.delete(url);
    await entry.pool.end();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const entries = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(entries.map((entry) => entry.pool.end()));
  }

  private evictOverflow(): void {
    const max = this.options.maxPools ?? 100;
    for (const [url, entry] of this.pools) {
      if (this.pools.size < max) break;
      this.pools.delete(url);
      void entry.pool.end();
    }
  }

  private async closeIdle(): Promise<void> {
    const cutoff = Date.now() - this.idleMs;
    for (const [url, entry] of [...this.pools]) {
      if (entry.lastUsed < cutoff && entry.pool.waitingCount === 0 && entry.pool.totalCount === entry.pool.idleCount) {
        this.pools.delete(url);
        await entry.pool.end();
      }
    }
  }
}
