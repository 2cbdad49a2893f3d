import { PeriodicWork } from '@platform/process';

interface WorkLog {
  error(obj: object, msg: string): void;
}

/**
 * A reconciler's loop (PeriodicWork): a pass at start, every `intervalMs` after the last one ended
 * for work nobody nudged about (another replica's, a crashed run's), and when nudged. `start`,
 * `stop` and `nudge` are the loop's; a subclass says what a pass does.
 */
export abstract class LoopedWork {
  private readonly loop: PeriodicWork;

  protected constructor(
    intervalMs: number,
    private readonly log: WorkLog,
  ) {
    this.loop = new PeriodicWork(() => this.pass(), { intervalMs, onError: (error) => this.log.error({ err: error }, 'a reconciler pass failed; the next one tries again') });
  }

  protected abstract pass(): Promise<void>;

  protected get stopped(): boolean {
    return !this.loop.isRunning;
  }

  /**
   * Claims and works until nothing is claimable or the loop stops. A failure ends this pass, logged
   * as `failed`: the failed row backs off (so it does not block the others next pass), and an
   * unreachable control plane is not hammered.
   */
  protected async drain(claim: () => Promise<boolean>, failed: string): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await claim())) return;
      } catch (error) {
        this.log.error({ err: error }, failed);
        return;
      }
    }
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** The pass runs outside the nudging request's context and so its deadline (PeriodicWork's own): a pass may be long DDL. */
  nudge(): void {
    this.loop.nudge();
  }
}
