import { connect } from 'node:net';
import {
  healthAfter,
  nextComputeStep,
  type ClusterDirectory,
  type ComputeDriver,
  type ComputeHealth,
  type ComputeOutcome,
  type ComputeProvisioner,
  type ComputeServer,
  type ComputeStore,
  type ComputeTask,
  type OnFailure,
  type Region,
  type ServerAddress,
  type ServerObservation,
} from '@platform/domain';
import type { DatabaseMover } from './database-mover.js';
import { LoopedWork } from './looped-work.js';
import { withoutPaths } from './public-text.js';

export interface ComputeReconcilerOptions {
  store: ComputeStore;
  driver: ComputeDriver;
  mover: DatabaseMover;
  clusters: ClusterDirectory;
  /** Superuser URL of a region's cluster. */
  clusterAdminUrl: (region: Region) => string;
  intervalMs: number;
  /** How long a moved database's old copy stays (paused) before it is dropped: longer than any replica caches where a database is. */
  dropGraceMs: number;
  /** Failed attempts after which provisioning or a resize gives up (FAILED); COMPUTE_MAX_ATTEMPTS unless set. */
  maxAttempts?: number;
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Test-only: called at named steps; a test makes it kill the process to prove recovery. */
  faultPoint?: (step: string) => void;
}

function listening(address: ServerAddress, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Moves compute instances toward their desired state (see COMPUTE_INSTANCE_STATUSES). A status is
 * committed before the work it names (PENDING -> PROVISIONING, READY -> RESIZING are steps of their
 * own), and the work of a step is idempotent, so a crash anywhere is followed by the same step
 * again, here or on another replica. Each pass also starts the servers of READY instances that no
 * longer run (after a restart of the platform), and removes the files of instances the control
 * plane has forgotten.
 */
export class ComputeReconciler extends LoopedWork implements ComputeProvisioner {
  constructor(private readonly options: ComputeReconcilerOptions) {
    super(options.intervalMs, options.log);
  }

  protected async pass(): Promise<void> {
    try {
      await this.supervise();
      await this.sweep();
    } catch (error) {
      this.options.log.error({ err: error }, 'compute supervision failed; it will be retried');
    }
    await this.drain(() => this.options.store.claim((task) => this.perform(task)), 'compute step failed; it will be retried');
  }

  /**
   * Starts the servers of READY instances that run nowhere (a server answering its port runs
   * somewhere), and records each server's health with the cause in its own words: a server that
   * cannot start (a full disk, a setting it refuses) is `down` through the API, not hidden behind READY.
   */
  private async supervise(): Promise<void> {
    for (const instance of await this.options.store.serving()) {
      if (this.stopped) return;
      if (this.options.driver.running(instance.id) || (instance.server && (await listening(instance.server)))) {
        await this.recordHealth(instance, { kind: 'running' });
        continue;
      }
      const exitCause = this.options.driver.exitCause(instance.id);
      let server: ComputeServer;
      try {
        server = await this.options.driver.ensureRunning(instance.id, instance.type);
      } catch (error) {
        // One instance's server that does not start keeps the others supervised.
        const cause = error instanceof Error ? error.message : String(error);
        if (await this.recordHealth(instance, { kind: 'cannot-start', cause })) {
          this.options.log.error({ instanceId: instance.id, cause, exitCause }, 'compute instance server is down and does not start; trying again');
        }
        continue;
      }
      this.options.log.info({ instanceId: instance.id, port: server.address.port, exitCause }, 'compute instance server started again');
      if (!instance.server || instance.server.port !== server.address.port || instance.server.host !== server.address.host) {
        await this.options.store.relocated(instance.id, server.address);
      }
      await this.recordHealth(instance, { kind: 'restarted', exitCause });
    }
  }

  /** Writes the health an observation calls for (healthAfter); answers whether it changed. */
  private async recordHealth(instance: { id: string; health: ComputeHealth | null }, seen: ServerObservation): Promise<boolean> {
    const next = healthAfter(instance.health, publicObservation(seen));
    if (!next) return false;
    await this.options.store.recordHealth(instance.id, next);
    return true;
  }

  private async sweep(): Promise<void> {
    for (const id of await this.options.store.forgotten(await this.options.driver.stored())) {
      await this.options.driver.remove(id);
      this.options.log.info({ instanceId: id }, 'files of a forgotten compute instance removed');
    }
  }

  /** Carries out the step the domain chooses for the claimed instance (nextComputeStep). */
  private async perform(task: ComputeTask): Promise<ComputeOutcome> {
    const step = nextComputeStep(task, new Date(), this.options.maxAttempts);
    switch (step.kind) {
      case 'advance':
        return { status: step.to };
      case 'move-in':
        return this.orFail(task, step.onFailure, 'provisioning', () => this.moveIn(task));
      case 'resize':
        return this.orFail(task, step.onFailure, 'resizing', () => this.resize(task), () => this.options.driver.restart(task.instance.id, task.instance.instanceType));
      case 'move-back':
        return this.moveBack(task);
      case 'remove':
        return this.remove(task, step.databaseLives);
      case 'drop-old-copy':
        return this.dropOldCopy(task);
      case 'nothing':
        return {};
    }
  }

  private fault(step: string): void {
    this.options.faultPoint?.(step);
  }

  private context({ instance, database }: ComputeTask): object {
    return { instanceId: instance.id, databaseId: database.id, status: instance.status };
  }

  private clusterUrl(task: ComputeTask): string {
    return this.options.clusterAdminUrl(task.database.region);
  }

  private async moveIn(task: ComputeTask): Promise<ComputeOutcome> {
    const { instance, database } = task;
    const server = await this.options.driver.ensureRunning(instance.id, instance.instanceType);
    this.fault('compute_provisioning_before_move');
    const { pausedAt } = await this.options.mover.move(database.physicalName, this.clusterUrl(task), server.adminUrl, () => this.options.store.markMoving(database.id), {
      targetShared: false,
    });
    await this.options.clusters.forDatabase({ region: database.region, instanceId: instance.id, server: server.address }).auditCustomerRoles(database.physicalName);
    this.fault('compute_provisioning_after_move');
    this.options.log.info({ ...this.context(task), pausedMs: Date.now() - pausedAt }, 'database moved onto its compute instance');
    return this.served(server, { status: 'READY', failure: null, pendingDrop: { copy: 'cluster', after: new Date(Date.now() + this.options.dropGraceMs) } });
  }

  private async resize(task: ComputeTask): Promise<ComputeOutcome> {
    const { instance, database } = task;
    this.fault('compute_resizing_before_restart');
    // Logins wait at the gateways for the restart instead of finding the server down.
    if (database.server) await this.options.store.markMoving(database.id);
    const server = await this.options.driver.restart(instance.id, instance.desiredInstanceType);
    this.options.log.info({ ...this.context(task), type: instance.desiredInstanceType.id }, 'compute instance resized');
    return this.served(server, { status: 'READY', instanceType: instance.desiredInstanceType, failure: null });
  }

  /** Back to the region's cluster with every row, before the server goes. The switch commits first (logins go back at once); removing the server is the next step. */
  private async moveBack(task: ComputeTask): Promise<ComputeOutcome> {
    const { instance, database } = task;
    const server = await this.options.driver.ensureRunning(instance.id, instance.instanceType);
    this.fault('compute_deleting_before_move');
    await this.options.mover.move(database.physicalName, server.adminUrl, this.clusterUrl(task), () => this.options.store.markMoving(database.id));
    await this.options.clusters.forRegion(database.region).auditCustomerRoles(database.physicalName);
    this.fault('compute_deleting_after_move');
    this.options.log.info(this.context(task), 'database moved back to its cluster');
    return { databaseServer: null };
  }

  private async remove(task: ComputeTask, databaseLives: boolean): Promise<ComputeOutcome> {
    // A move onto the instance that never finished may have left the cluster's copy paused.
    if (databaseLives) await this.options.mover.resume(this.clusterUrl(task), task.database.physicalName);
    this.fault('compute_deleting_before_remove');
    await this.options.driver.remove(task.instance.id);
    this.options.log.info(this.context(task), 'compute instance terminated');
    return { status: 'TERMINATED', server: null, databaseServer: databaseLives ? null : undefined, pendingDrop: null, health: null };
  }

  /** The copy a move left on the region's cluster (paused since), with the roles there. */
  private async dropOldCopy(task: ComputeTask): Promise<ComputeOutcome> {
    await this.options.clusters.forRegion(task.database.region).dropDatabase(task.database.physicalName);
    this.options.log.info(this.context(task), 'moved database’s old copy dropped');
    return { pendingDrop: null };
  }

  /** A step that leaves the server running and serving the database: healthy. */
  private served(server: ComputeServer, outcome: ComputeOutcome): ComputeOutcome {
    return { ...outcome, server: server.address, databaseServer: server.address, health: { status: 'ok', reason: null } };
  }

  /**
   * Runs a step; when its failure is to give up (nextComputeStep says when): FAILED with the
   * reason, after `recover` (a resize restarts the server as it was, so the database stays served).
   */
  private async orFail(
    task: ComputeTask,
    onFailure: OnFailure,
    what: string,
    step: () => Promise<ComputeOutcome>,
    recover?: () => Promise<ComputeServer>,
  ): Promise<ComputeOutcome> {
    try {
      return await step();
    } catch (error) {
      if (onFailure === 'retry') throw error;
      const reason = withoutPaths(`${what} failed: ${error instanceof Error ? error.message : String(error)}`).slice(0, 1000);
      this.options.log.error({ instanceId: task.instance.id, err: error }, 'compute instance failed');
      if (!recover) return { status: 'FAILED', failure: reason };
      const server = await recover();
      return { status: 'FAILED', failure: reason, ...(task.database.server ? { server: server.address, databaseServer: server.address } : { server: server.address }) };
    }
  }
}

/** What the API shows of an observation: the server's words without the machine's folders. */
function publicObservation(seen: ServerObservation): ServerObservation {
  if (seen.kind === 'cannot-start') return { kind: 'cannot-start', cause: withoutPaths(seen.cause) };
  if (seen.kind === 'restarted') return { kind: 'restarted', exitCause: seen.exitCause === null ? null : withoutPaths(seen.exitCause) };
  return seen;
}
