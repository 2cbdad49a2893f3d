/** Items serialized between two turns of the event loop. */
export const JSON_SLICE_ITEMS = 200;

/**
 * JSON.stringify of an array, a slice of items at a time, giving the event loop a turn between
 * slices (setImmediate, so pending I/O runs first): a page of 1,000 rows, some 200 kB of JSON,
 * never holds every other request of the process for the whole of its serialization.
 */
export async function stringifyInSlices(items: readonly unknown[], sliceItems = JSON_SLICE_ITEMS): Promise<string> {
  const parts: string[] = [];
  for (let at = 0; at < items.length; at += sliceItems) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    // Each slice as JSON.stringify writes an array (undefined and functions as null), brackets off.
    parts.push(JSON.stringify(items.slice(at, at + sliceItems)).slice(1, -1));
  }
  return `[${parts.join(',')}]`;
}

/**
 * Requests for long pages take turns: one runs at a time in this process (first come, first
 * served), the others wait doing nothing, so requests for small answers share the machine with
 * one long page's work rather than with all of them at once. And while other requests are being
 * served (`othersInFlight`), a turn begins only after a pause of `yieldFactor` times the previous
 * turn: long pages then take at most 1 / (1 + yieldFactor) of the process's time from short
 * requests (a third by default), and a client paging alone is never held. No pause is longer
 * than MAX_PAUSE_MS.
 */
/** The longest pause between two long pages' turns. */
const MAX_PAUSE_MS = 250;

export class LongPageTurns {
  private busy = false;
  private readonly waiting: (() => void)[] = [];
  private lastTurnMs = 0;
  private lastEnded = 0;

  constructor(
    private readonly othersInFlight: () => number = () => 0,
    private readonly yieldFactor = 2,
  ) {}

  async take<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      // Bounded: a turn that waited long for its database (up to DATA_PLANE_WAIT_MS) was not busy.
      const pause = this.lastEnded + Math.min(this.yieldFactor * this.lastTurnMs, MAX_PAUSE_MS) - performance.now();
      if (pause > 0 && this.othersInFlight() > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      const started = performance.now();
      try {
        return await work();
      } finally {
        this.lastEnded = performance.now();
        this.lastTurnMs = this.lastEnded - started;
      }
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }
}
