import { withoutDeadline } from '@platform/deadline';

/**
 * Runs `pass` now and then: when nudged (at once, or right after the pass under way) and every
 * `intervalMs` after the last pass ended, for work nobody nudged about (another replica's, a
 * crashed run's). Never two passes at once; `stop` waits for the one under way.
 */
export class NudgedLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

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

  /** Runs outside the nudging request's deadline (`@platform/deadline`): a pass may be long DDL. */
  nudge(): void {
    withoutDeadline(() => this.nudgeNow());
  }

  private nudgeNow(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.pass().finally(() => {
      this.running = null;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.nudge();
      } else {
        this.timer = setTimeout(() => this.nudge(), this.intervalMs);
        this.timer.unref();
      }
    });
  }
}

/** Work a NudgedLoop runs: `start`, `stop` and `nudge` are the loop's; a subclass says what a pass does. */
export abstract class LoopedWork {
  private readonly loop: NudgedLoop;

  protected constructor(intervalMs: number) {
    this.loop = new NudgedLoop(() => this.pass(), intervalMs);
  }

  protected abstract pass(): Promise<void>;

  protected get stopped(): boolean {
    return this.loop.isStopped;
  }

  /**
   * Claims and works until nothing is claimable or the loop stops. A failure ends this pass, logged
   * as `failed`: the failed row backs off (so it does not block the others next pass), and an
   * unreachable control plane is not hammered.
   */
  protected async drain(claim: () => Promise<boolean>, log: { error(obj: object, msg: string): void }, failed: string): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await claim())) return;
      } catch (error) {
        log.error({ err: error }, failed);
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

  nudge(): void {
    this.loop.nudge();
  }
}
