import type { ClusterDirectory, ClusterDriver, ObserverMinute, ObserverStore, Region } from '@platform/domain';
import { processCpuMs } from './process-cpu.js';

export interface ObserverSamplerOptions {
  clusters: ClusterDirectory;
  store: ObserverStore;
  intervalMs: number;
  /** Whether this process is the one that samples (AdvisoryLeader); a replica that is not stays idle. */
  isLeader: () => Promise<boolean>;
  log: { warn(details: object, message: string): void };
  now?: () => Date;
}

interface Baseline {
  statements: Map<string, number> | null;
  /** CPU ms per backend process id, as last read. */
  cpu: Map<number, number>;
}

/**
 * The database servers' own view for query insights: every `intervalMs` it asks each cluster
 * what it did (statements completed per database, pg_stat_statements; its backends' process ids)
 * and reads each backend's CPU time from /proc, and adds the differences since the last sample
 * to the current minute of each database. A backend that appeared since then counts from its
 * start; one that ended in between loses what it used since the last sample; a sample straddling
 * a minute counts in the later minute. The first sample of a process (or after it takes over)
 * only sets the baseline.
 */
export class ObserverSampler {
  private readonly baselines = new Map<Region, Baseline>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: ObserverSamplerOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.sampleNow(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Samples once, after any sample still running. */
  sampleNow(): Promise<void> {
    this.running = this.running.then(() =>
      this.sample().catch((error: unknown) => this.options.log.warn({ err: error }, 'observer sample failed; the next one measures from here')),
    );
    return this.running;
  }

  private async sample(): Promise<void> {
    if (!(await this.options.isLeader())) {
      this.baselines.clear();
      return;
    }
    const now = this.options.now?.() ?? new Date();
    const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    const databases = await this.options.store.liveDatabases();
    // Regions served by one cluster share its driver: each cluster is sampled once, for all of them.
    const clusters = new Map<ClusterDriver, Region[]>();
    for (const region of this.options.clusters.regions()) {
      const driver = this.options.clusters.forRegion(region);
      clusters.set(driver, [...(clusters.get(driver) ?? []), region]);
    }
    const rows: ObserverMinute[] = [];
    for (const [driver, regions] of clusters) {
      // A cluster's baseline is kept under the first region it serves.
      const region = regions[0];
      let activity;
      try {
        activity = await driver.activity();
      } catch (error) {
        this.baselines.delete(region);
        this.options.log.warn({ err: error, region }, 'could not sample a cluster');
        continue;
      }
      const cpu = new Map<number, number>();
      if (activity.localProcesses) {
        for (const pids of activity.backends.values()) {
          for (const pid of pids) {
            const used = processCpuMs(pid);
            if (used !== null) cpu.set(pid, used);
          }
        }
      }
      const before = this.baselines.get(region);
      this.baselines.set(region, { statements: activity.statements, cpu });
      if (!before) continue;
      for (const [physicalName, database] of databases) {
        if (!regions.includes(database.region)) continue;
        let statements: number | null = null;
        if (activity.statements && before.statements) {
          // Fewer than before: the statistics were reset (or entries evicted); count none.
          statements = Math.max(0, (activity.statements.get(physicalName) ?? 0) - (before.statements.get(physicalName) ?? 0));
        }
        let cpuMs: number | null = null;
        if (activity.localProcesses) {
          cpuMs = 0;
          for (const pid of activity.backends.get(physicalName) ?? []) {
            const used = cpu.get(pid);
            if (used === undefined) continue;
            const previously = before.cpu.get(pid);
            cpuMs += previously === undefined || previously > used ? used : used - previously;
          }
        }
        rows.push({ databaseId: database.id, minute, statements, cpuMs });
      }
    }
    await this.options.store.add(rows);
  }
}
