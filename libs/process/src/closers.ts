export interface CloserLog {
  error(details: object, message: string): void;
}

/** How long a closer may take before the log names it (and again each time as long). */
const SLOW_CLOSER_MS = 15_000;

interface Closer {
  name: string;
  close: () => Promise<void> | void;
}

/**
 * What a service opened, closed in the reverse order: each thing is pushed as soon as it is open,
 * so that nothing is closed while something opened after it (and so maybe using it) still runs.
 * `close` runs each closer once, goes on past one that fails (logging it), and then throws what
 * failed: the error itself, or an AggregateError of several.
 */
export class Closers {
  private readonly stack: Closer[] = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly log: CloserLog) {}

  push(name: string, close: () => Promise<void> | void): void {
    if (this.closing) throw new Error(`"${name}" was opened after closing began`);
    this.stack.push({ name, close });
  }

  /** Closes everything, last opened first; every call answers the same promise. */
  close(): Promise<void> {
    return (this.closing ??= this.closeAll());
  }

  private async closeAll(): Promise<void> {
    const failures: unknown[] = [];
    for (const closer of [...this.stack].reverse()) {
      // A closer that never ends would hold the process with nothing said: name it while it waits.
      const slow = setInterval(() => this.log.error({ closer: closer.name }, `closing ${closer.name} has taken over ${SLOW_CLOSER_MS / 1000} s; still waiting`), SLOW_CLOSER_MS);
      slow.unref();
      try {
        await closer.close();
      } catch (error) {
        this.log.error({ err: error, closer: closer.name }, 'closing failed; closing the rest');
        failures.push(error);
      } finally {
        clearInterval(slow);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} closers failed`);
  }
}

/**
 * Runs a service's start with a fresh stack: if the start fails midway, what it opened so far is
 * closed (last first) and the start's own error is thrown, not a closer's.
 */
export async function startWithClosers<T>(log: CloserLog, start: (closers: Closers) => Promise<T>): Promise<T> {
  const closers = new Closers(log);
  try {
    return await start(closers);
  } catch (error) {
    // Each closer's failure is logged by the stack; the start's error is the one to tell.
    await closers.close().catch(() => undefined);
    throw error;
  }
}
