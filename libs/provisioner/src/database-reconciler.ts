import { CopyImpossibleError, type ClusterDirectory, type Database, type DatabaseCopier, type DatabaseStatus, type ProvisioningStore, type ProvisioningTask, type Provisioner } from '@platform/domain';
import { LoopedWork } from './looped-work.js';

export interface DatabaseReconcilerOptions {
  store: ProvisioningStore;
  clusters: ClusterDirectory;
  /** Restores and branches (a database with a `source`) are built from backups by it; without one they fail and are retried. */
  copier?: DatabaseCopier;
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
        // A restore or branch deleted before it was built may have left a scratch server behind.
        if (database.source) await this.options.copier?.discard(database);
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
        return this.advance(database, task.to, task.source);
    }
  }

  private async advance(database: Database, to: DatabaseStatus, source: Database | undefined): Promise<void> {
    const cluster = this.options.clusters.forRegion(database.region);
    switch (to) {
      case 'BUILT':
        if (database.source) {
          if (!source || !this.options.copier) throw new Error(`database ${database.physicalName} is a restore or branch and this provisioner has no backups to build it from`);
          // The whole copy again on every attempt: BUILT is recorded only once it is complete, so a
          // half-restored database is never verified, let alone READY.
          await this.options.copier.copy({ source, at: database.source.at, target: database }).catch((error: unknown) => {
            // The store records it as the database's failure (FAILED) and claims it no more.
            if (error instanceof CopyImpossibleError) this.options.log.error({ databaseId: database.id, sourceId: source.id, reason: error.message }, 'a restore or branch cannot be made; it is FAILED');
            throw error;
          });
          this.options.faultPoint?.('after_copy_database');
          // The copy has the built-in schema of the source's instant: brought up to date, and the
          // service login enabled with this database's own password.
          await cluster.upgradeBuiltInSchema(database.physicalName);
          break;
        }
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
