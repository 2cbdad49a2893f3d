import type { Region } from '../regions.js';
import type { ComputeType } from './compute-types.js';

/**
 * PENDING -> PROVISIONING (server started, data moved to it) -> READY; READY -> RESIZING (restarted
 * with the desired type's settings) -> READY; any -> DELETING (data moved back to the shared
 * cluster, server stopped, its files removed) -> TERMINATED; FAILED when the driver fails, with a
 * reason. The status is persisted before the work it names starts.
 */
export const COMPUTE_INSTANCE_STATUSES = ['PENDING', 'PROVISIONING', 'READY', 'RESIZING', 'DELETING', 'FAILED', 'TERMINATED'] as const;
export type ComputeInstanceStatus = (typeof COMPUTE_INSTANCE_STATUSES)[number];

/** Statuses of an instance that still holds (or is about to hold) a server. */
export const LIVE_COMPUTE_STATUSES: readonly ComputeInstanceStatus[] = ['PENDING', 'PROVISIONING', 'READY', 'RESIZING', 'DELETING', 'FAILED'];

export const INSTANCE_NAME_MAX_LENGTH = 63;

/**
 * Whether an instance's server runs, as the reconciler last found it: `ok` (running; `reason` says
 * why it was last started again, if it was), or `down` with the cause in the server's own words (a
 * full disk, a setting it refuses...). `since`: when it became so.
 */
export const COMPUTE_HEALTH_STATUSES = ['ok', 'down'] as const;
export type ComputeHealthStatus = (typeof COMPUTE_HEALTH_STATUSES)[number];

export interface ComputeHealth {
  status: ComputeHealthStatus;
  reason: string | null;
  since: Date;
}

/** Where a running instance's server listens. */
export interface ServerAddress {
  host: string;
  port: number;
}

export interface ComputeInstance {
  id: string;
  databaseId: string;
  name: string;
  /** The type the server runs as now (a snapshot: the catalog may change later). */
  instanceType: ComputeType;
  /** The type asked for; differs from instanceType until a resize completes. */
  desiredInstanceType: ComputeType;
  status: ComputeInstanceStatus;
  /** Why the instance FAILED, in words for the developer. */
  failure: string | null;
  /** Its server's health while it has one (READY, RESIZING, FAILED with a server); null before and after. */
  health: ComputeHealth | null;
  created: Date;
  updated: Date;
  /** When it reached TERMINATED. */
  deleted: Date | null;
}

/** A time window in which instances were alive; either end may be open. */
export interface InstanceWindow {
  start?: Date;
  end?: Date;
}

export interface ComputeInstanceRepository {
  /** Persists a PENDING instance; ConflictError compute_instance_exists when the database has a live one. */
  create(input: { id: string; databaseId: string; name: string; type: ComputeType }): Promise<ComputeInstance>;
  /** The database's instances alive at some point of the window (all when it is open), oldest first. */
  listForDatabase(databaseId: string, window: InstanceWindow): Promise<ComputeInstance[]>;
  find(databaseId: string, id: string): Promise<ComputeInstance | null>;
  /** Sets the name and/or desired type of a live instance; null when it is no longer live. */
  update(databaseId: string, id: string, changes: { name?: string; desiredType?: ComputeType }): Promise<ComputeInstance | null>;
  /** Moves a live instance to DELETING (a TERMINATED one stays as it is) and answers it. */
  markDeleting(databaseId: string, id: string): Promise<ComputeInstance | null>;
}

/** Wakes whatever moves instances toward their desired state (the provisioner's ComputeReconciler). */
export interface ComputeProvisioner {
  nudge(): void;
}

/** A running instance server as its driver reports it. */
export interface ComputeServer {
  address: ServerAddress;
  /** A superuser URL of the server (for a database name, use databaseUrl of @platform/config). */
  adminUrl: string;
}

/**
 * Runs instance servers: local PostgreSQL processes by default; a cloud or Kubernetes driver would
 * implement the same port. Every operation is idempotent, so a step interrupted by a crash can be
 * run again.
 */
export interface ComputeDriver {
  /** Starts the server with the type's settings, creating it on first use, and answers where it listens. */
  ensureRunning(instanceId: string, type: ComputeType): Promise<ComputeServer>;
  /** Restarts the server with the type's settings, keeping its data. */
  restart(instanceId: string, type: ComputeType): Promise<ComputeServer>;
  /** The server of the instance if this process runs it, or null. */
  running(instanceId: string): ComputeServer | null;
  /** A superuser URL of the instance's server wherever it runs, or null when it has none. */
  adminUrl(instanceId: string): string | null;
  /** Why the server this process ran for the instance ended without being stopped, in its own words; null when it runs or said nothing. */
  exitCause(instanceId: string): string | null;
  /** Stops the server and removes everything it stored. */
  remove(instanceId: string): Promise<void>;
  /** Instances that have files here (to find leftovers of instances the control plane forgot). */
  stored(): Promise<string[]>;
  /** Stops every server this driver runs (their data stays). */
  close(): Promise<void>;
}

/** What the reconciler is given: a claimed instance, its database and where things stand. */
export interface ComputeTask {
  instance: ComputeInstance;
  /**
   * `purged`: the database was deleted and its retention has ended (its data is dropped). A deleted
   * database still restorable is not claimed with its instance at all: both wait as they are.
   */
  database: { id: string; physicalName: string; region: Region; purged: boolean; server: ServerAddress | null };
  /** Where the instance's server was last seen listening. */
  server: ServerAddress | null;
  /** A copy of the data that a finished move left behind, to drop once `dropAfter` has passed. */
  pendingDrop: 'cluster' | 'instance' | null;
  dropAfter: Date | null;
  /** Failed attempts since the last success. */
  attempts: number;
}

/** What a step changed; fields left out stay as they are. */
export interface ComputeOutcome {
  status?: ComputeInstanceStatus;
  instanceType?: ComputeType;
  failure?: string | null;
  server?: ServerAddress | null;
  /** Where the database is served now: its instance's server, or null for its region's cluster. */
  databaseServer?: ServerAddress | null;
  pendingDrop?: { copy: 'cluster' | 'instance'; after: Date } | null;
  /** The server's health now (`since` is set where it changes), or null when it has no server any more. */
  health?: Omit<ComputeHealth, 'since'> | null;
}


/** The control plane's side of the compute reconciler (claims with SKIP LOCKED; see SqlComputeStore). */
export interface ComputeStore {
  /** Locks one instance that needs work, runs `work`, persists its outcome in the same transaction. */
  claim(work: (task: ComputeTask) => Promise<ComputeOutcome>, options?: { instanceId?: string }): Promise<boolean>;
  /** READY instances, whose server should run (a resize's own step starts the server it stopped). */
  serving(): Promise<{ id: string; type: ComputeType; server: ServerAddress | null; health: ComputeHealth | null }[]>;
  /** Records the server's health of a READY instance; `since` moves only when the status changes. */
  recordHealth(instanceId: string, health: Omit<ComputeHealth, 'since'>): Promise<void>;
  /**
   * Says, at once (outside the claim's transaction), that the database's data starts moving; the
   * step's outcome, whatever it is, clears it.
   */
  markMoving(databaseId: string): Promise<void>;
  /** Records where a running instance listens now (its server came back on another port). */
  relocated(instanceId: string, address: ServerAddress): Promise<void>;
  /** Of these ids, those of instances that are TERMINATED or unknown. */
  forgotten(ids: string[]): Promise<string[]>;
}
