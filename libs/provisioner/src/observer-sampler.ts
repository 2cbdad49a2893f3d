import { PeriodicWork } from '@platform/process';
import type { ClusterDirectory, ClusterDriver, ObservedDatabase, ObserverMinute, ObserverStore } from '@platform/domain';
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

/** A server the observer samples, and the databases it holds (physical name to id). */
interface SampledServer {
  key: string;
  driver: ClusterDriver;
  databases: Map<string, string>;
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
  /** By server: a region (its cluster's first) or `instance:<id>`. */
  private readonly baselines = new Map<string, Baseline>();
  private readonly loop: PeriodicWork;

  constructor(private readonly options: ObserverSamplerOptions) {
    this.loop = new PeriodicWork(() => this.sample(), {
      intervalMs: options.intervalMs,
      firstPass: 'after-interval',
      onError: (error) => options.log.warn({ err: error }, 'observer sample failed; the next one measures from here'),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Samples once, after any sample still running. */
  sampleNow(): Promise<void> {
    return this.loop.runNow();
  }

  private async sample(): Promise<void> {
    if (!(await this.options.isLeader())) {
      this.baselines.clear();
      return;
    }
    const now = this.options.now?.() ?? new Date();
    const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    const rows: ObserverMinute[] = [];
    const sampled = new Set<string>();
    for (const server of this.servers(await this.options.store.liveDatabases())) {
      sampled.add(server.key);
      rows.push(...(await this.sampleServer(server, minute)));
    }
    // A server no longer sampled (an instance gone) leaves no baseline behind.
    for (const key of this.baselines.keys()) if (!sampled.has(key)) this.baselines.delete(key);
    await this.options.store.add(rows);
  }

  /**
   * The servers to sample and the databases each holds: each region's cluster once (regions that
   * share one share its driver), with the databases served there; each compute instance's server,
   * with its database.
   */
  private servers(databases: Map<string, ObservedDatabase>): SampledServer[] {
    const byDriver = new Map<ClusterDriver, SampledServer>();
    for (const region of this.options.clusters.regions()) {
      const driver = this.options.clusters.forRegion(region);
      // A cluster's baseline is kept under the first region it serves.
      if (!byDriver.has(driver)) byDriver.set(driver, { key: region, driver, databases: new Map() });
      const server = byDriver.get(driver)!;
      for (const [physicalName, database] of databases) {
        if (database.region === region && !database.server) server.databases.set(physicalName, database.id);
      }
    }
    const servers = [...byDriver.values()];
    for (const [physicalName, database] of databases) {
      if (!database.server || !database.instanceId) continue;
      try {
        const driver = this.options.clusters.forDatabase(database);
        servers.push({ key: `instance:${database.instanceId}`, driver, databases: new Map([[physicalName, database.id]]) });
      } catch (error) {
        this.options.log.warn({ err: error, databaseId: database.id }, 'cannot reach a compute instance to sample it');
      }
    }
    return servers;
  }

  /** What one server did since its last sample, per database; nothing the first time (the baseline). */
  private async sampleServer(server: SampledServer, minute: Date): Promise<ObserverMinute[]> {
    let activity;
    try {
      activity = await server.driver.activity();
    } catch (error) {
      this.baselines.delete(server.key);
      this.options.log.warn({ err: error, server: server.key }, 'could not sample a database server');
      return [];
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
    const before = this.baselines.get(server.key);
    this.baselines.set(server.key, { statements: activity.statements, cpu });
    if (!before) return [];
    const rows: ObserverMinute[] = [];
    for (const [physicalName, databaseId] of server.databases) {
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
      rows.push({ databaseId, minute, statements, cpuMs });
    }
    return rows;
  }
}
