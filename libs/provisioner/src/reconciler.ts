import type { ClusterDirectory, ProvisioningStore, ProvisioningTask, Provisioner } from '@platform/domain';

export interface ReconcilerOptions {
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
export class Reconciler implements Provisioner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(private readonly options: ReconcilerOptions) {}

  start(): void {
    this.stopped = false;
    this.nudge();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const workers = Array.from({ length: Math.max(1, this.options.workers ?? 2) }, () => this.drain());
    this.running = Promise.all(workers).then(() => undefined).finally(() => {
      this.running = null;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.nudge();
      } else {
        this.timer = setTimeout(() => this.nudge(), this.options.intervalMs);
        this.timer.unref();
      }
    });
  }

  /** Drops a deleted database now; a failure is logged and left to the retrying loop. */
  async dropNow(databaseId: string): Promise<void> {
    try {
      await this.options.store.claim((task) => this.perform(task), { databaseId });
    } catch (error) {
      this.options.log.error({ err: error, databaseId }, 'drop failed; it will be retried');
    }
  }

  /**
   * Works until nothing is claimable. A failure ends this pass: the failed row backs off (so it
   * does not block the others next pass), and an unreachable control plane is not hammered.
   */
  private async drain(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await this.options.store.claim((task) => this.perform(task)))) return;
      } catch (error) {
        this.options.log.error({ err: error }, 'provisioning step failed; it will be retried');
        return;
      }
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
