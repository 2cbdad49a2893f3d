import type { Region } from '../regions.js';

/** What a cluster says of its own work right now. */
export interface ClusterActivity {
  /**
   * Statements completed per database (physical name) since the server's statistics began, from
   * pg_stat_statements; null when the server does not load it.
   */
  statements: Map<string, number> | null;
  /** The client backends serving each database (physical name): their process ids. */
  backends: Map<string, number[]>;
  /** Whether those process ids are processes of this machine (the cluster runs here), so their CPU time can be read. */
  localProcesses: boolean;
}

/** One database's minute as the database server saw it: added to by every sample in the minute. */
export interface ObserverMinute {
  databaseId: string;
  minute: Date;
  /** null: not known (pg_stat_statements not loaded). */
  statements: number | null;
  /** null: not known (the cluster's processes are not on this machine). */
  cpuMs: number | null;
}

/** A database the observer samples: on its region's cluster, or on its instance's server. */
export interface ObservedDatabase {
  id: string;
  region: Region;
  instanceId: string | null;
  server: { host: string; port: number } | null;
}

/** The control plane's side of the observer. */
export interface ObserverStore {
  /** Live databases by physical name, with their region, and their compute instance when they are served there. */
  liveDatabases(): Promise<Map<string, ObservedDatabase>>;
  /** Adds each row to its database's minute. */
  add(rows: ObserverMinute[]): Promise<void>;
}
