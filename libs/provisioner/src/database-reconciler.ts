import type { ClusterDirectory, ProvisioningStore, ProvisioningTask, Provisioner } from '@platform/domain';
import { LoopedWork } from './looped-work.js';

export interface DatabaseReconcilerOptions {
  store: ProvisioningStore;
  clusters: ClusterDirectory;
  intervalMs: number;
  /** How many claims this process works on at once; SKIP LOCKED keeps them on different rows. */
  workers?: number;
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Test-only: called at named steps; a test makes it kill the process to prove recovery. */
  faultPoint?: (step: string) => void;
}

/**
 * Moves databases toward their desired state: REQUESTED -> BUILT -> READY, and deleted ones to
 * dropped. Each step is idempotent and its outcome is written in the same transaction that holds
 * the claim, so a crash at any point leaves a row that the next pass (here or on any replica)
 * picks up again, and a re-run of a step finds its work already done.
 */
export class DatabaseReconciler extends LoopedWork implements Provisioner {
  constructor(private readonly options: DatabaseReconcilerOptions) {
    super(options.intervalMs, options.log);
  }

  protected async pass(): Promise<void> {
    const claim = () => this.options.store.claim((task) => this.perform(task));
    await Promise.all(
      Array.from({ length: Math.max(1, this.options.workers ?? 2) }, () => this.drain(claim, 'provisioning step failed; it will be retried')),
    );
  }

  /** Drops a deleted database now; a failure is logged and left to the retrying loop. */
  async dropNow(databaseId: string): Promise<void> {
    try {
      await this.options.store.claim((task) => this.perform(task), { databaseId });
    } catch (error) {
      this.options.log.error({ err: error, databaseId }, 'drop failed; it will be retried');
    }
  }

  private async perform(task: ProvisioningTask): Promise<void> {
    const { database } = task;
    const cluster = this.options.clusters.forRegion(database.region);
    const context = { databaseId: database.id, physicalName: database.physicalName };
    if (task.kind === 'drop') {
      await cluster.dropDatabase(database.physicalName);
      this.options.log.info(context, 'database dropped');
      return;
    }
    switch (task.to) {
      case 'BUILT':
        await cluster.createDatabase(database.physicalName);
        this.options.faultPoint?.('after_create_database');
        await cluster.installBuiltInSchema(database.physicalName);
        break;
      case 'READY':
        await cluster.verifyDatabase(database.physicalName);
        break;
      default:
        throw new Error(`no provisioning step leads to ${task.to}`);
    }
    this.options.log.info({ ...context, status: task.to }, 'database advanced');
  }
}
