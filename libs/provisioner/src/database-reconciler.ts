import type { ClusterDirectory, Database, DatabaseStatus, ProvisioningStore, ProvisioningTask, Provisioner } from '@platform/domain';
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
 * Moves databases toward their desired state: REQUESTED -> BUILT -> READY; deleted ones closed
 * (refusing connections, sessions ended) and, once their retention has ended, dropped; restored
 * ones reopened. Each step is idempotent and its outcome is written in the same transaction that
 * holds the claim, so a crash at any point leaves a row that the next pass (here or on any replica)
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

  /** Does what the database needs now (close, reopen, drop); a failure is logged and left to the retrying loop. */
  async settleNow(databaseId: string): Promise<void> {
    try {
      await this.options.store.claim((task) => this.perform(task), { databaseId });
    } catch (error) {
      this.options.log.error({ err: error, databaseId }, 'database step failed; it will be retried');
    }
  }

  private async perform(task: ProvisioningTask): Promise<void> {
    const { database } = task;
    const context = { databaseId: database.id, physicalName: database.physicalName };
    switch (task.kind) {
      case 'close':
        // Where it is served now: its region's cluster, or its dedicated instance's server.
        await this.options.clusters.forDatabase(database).closeDatabase(database.physicalName);
        this.options.log.info(context, 'deleted database closed');
        return;
      case 'reopen':
        await this.options.clusters.forDatabase(database).reopenDatabase(database.physicalName);
        this.options.log.info(context, 'restored database reopened');
        return;
      case 'drop':
        // On its region's cluster; a dedicated instance's server goes with its instance, which the
        // compute reconciler removes once this drop is recorded.
        this.options.faultPoint?.('before_drop_database');
        await this.options.clusters.forRegion(database.region).dropDatabase(database.physicalName);
        this.options.faultPoint?.('after_drop_database');
        this.options.log.info(context, 'database dropped');
        return;
      case 'advance':
        return this.advance(database, task.to);
    }
  }

  private async advance(database: Database, to: DatabaseStatus): Promise<void> {
    const cluster = this.options.clusters.forRegion(database.region);
    switch (to) {
      case 'BUILT':
        await cluster.createDatabase(database.physicalName);
        this.options.faultPoint?.('after_create_database');
        await cluster.installBuiltInSchema(database.physicalName);
        break;
      case 'READY':
        await cluster.verifyDatabase(database.physicalName);
        break;
      default:
        throw new Error(`no provisioning step leads to ${to}`);
    }
    this.options.log.info({ databaseId: database.id, physicalName: database.physicalName, status: to }, 'database advanced');
  }
}
