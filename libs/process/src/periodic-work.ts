import { AsyncLocalStorage } from 'node:async_hooks';

export interface PeriodicWorkOptions {
  /** The pause between the end of one pass and the start of the next one nobody asked for. */
  intervalMs: number;
  /** `now` (the default): `start` runs a pass at once; `after-interval`: the first comes one interval later. */
  firstPass?: 'now' | 'after-interval';
  /** A pass that threw or rejected; the loop goes on. */
  onError: (error: unknown) => void;
}

type State = 'idle' | 'started' | 'stopped';

/**
 * The one way background work runs: a pass at start (or one interval later), then one interval
 * after each pass ends, and at once when nudged. Never two passes at once: a nudge during a pass
 * runs one more pass right after it, however many nudges came. A failing pass is reported to
 * `onError` and the loop goes on. `stop` waits for the pass under way and runs none after; a
 * stopped loop stays stopped. Every pass runs in the async context the loop was made in, never in
 * that of whoever started or nudged it (a request's deadline or logger).
 */
export class PeriodicWork {
  private state: State = 'idle';
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** The pass asked for while one runs; its promise settles when that pass has run (or was dropped by `stop`). */
  private queued: { done: Promise<void>; resolve: () => void } | null = null;
  /**
   * Runs a function in the context the loop was made in. A pass (and the timer and continuations
   * it sets up) would otherwise keep the context of the caller that set it off, for good: a loop
   * nudged from a request would run every later pass under that request's expired deadline.
   */
  private readonly inOwnContext = AsyncLocalStorage.snapshot();

  constructor(
    private readonly pass: () => Promise<void> | void,
    private readonly options: PeriodicWorkOptions,
  ) {}

  /** Started and not stopped. */
  get isRunning(): boolean {
    return this.state === 'started';
  }

  /** Only from idle: a second start does nothing, and so does a start after `stop` (a closed service stays closed). */
  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'started';
    if (this.options.firstPass === 'after-interval') this.schedule();
    else void this.request();
  }

  /** A pass now, or right after the one under way; nothing unless started. */
  nudge(): void {
    if (this.state === 'started') void this.request();
  }

  /**
   * A pass now, or right after the one under way, started or not (a final write, a test's step);
   * resolves when it has run. After `stop`, none runs.
   */
  runNow(): Promise<void> {
    if (this.state === 'stopped') return Promise.resolve();
    return this.request();
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    this.clearTimer();
    // The pass under way may hand over to a queued one only while not stopped; wait for the last.
    while (this.running) await this.running;
  }

  private request(): Promise<void> {
    // The follow-up pass and the next timer are set up from this pass's continuation: in its context too.
    if (!this.running) return this.inOwnContext(() => this.runPass());
    if (!this.queued) {
      let resolve!: () => void;
      const done = new Promise<void>((settle) => (resolve = settle));
      this.queued = { done, resolve };
    }
    return this.queued.done;
  }

  private runPass(): Promise<void> {
    this.clearTimer();
    const pass = this.guardedPass();
    this.running = pass.then(() => {
      this.running = null;
      const queued = this.queued;
      this.queued = null;
      if (this.state === 'stopped') queued?.resolve();
      else if (queued) void this.runPass().then(queued.resolve);
      else if (this.state === 'started') this.schedule();
    });
    return pass;
  }

  private async guardedPass(): Promise<void> {
    try {
      await this.pass();
    } catch (error) {
      try {
        this.options.onError(error);
      } catch {
        // A reporter that throws must not end the loop; there is nowhere left to report it.
      }
    }
  }

  private schedule(): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.nudge();
    }, this.options.intervalMs);
    // Background work never keeps a process alive on its own.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
