import { AsyncLocalStorage } from 'node:async_hooks';

/** When the current unit of work must be done by (Date.now() milliseconds). */
const scope = new AsyncLocalStorage<number>();

/** The `code` of a DeadlineExceededError, which survives wrappers that copy an error's own fields (MikroORM's). */
export const DEADLINE_EXCEEDED = 'DEADLINE_EXCEEDED';

/** What a wait cut by its deadline throws. */
export class DeadlineExceededError extends Error {
  readonly code = DEADLINE_EXCEEDED;

  constructor(what: string) {
    super(`${what} did not finish within the deadline`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Runs `work` under a deadline `ms` from now, or the enclosing one when that is sooner. Waits that
 * honour deadlines (queries and connection checkouts of the platform's pools) started anywhere
 * inside it, however deep, give up at that time.
 */
export function withDeadline<T>(ms: number, work: () => T): T {
  const at = Date.now() + ms;
  const outer = scope.getStore();
  return scope.run(outer === undefined ? at : Math.min(outer, at), work);
}

/**
 * Runs `work` outside any deadline: for work a request only starts (a reconciler's pass it
 * nudges), which would otherwise inherit the request's deadline and be cut with it.
 */
export function withoutDeadline<T>(work: () => T): T {
  return scope.exit(work);
}

/** Milliseconds left of the current deadline (0 or less once it has passed); undefined outside any. */
export function remainingMs(): number | undefined {
  const at = scope.getStore();
  return at === undefined ? undefined : at - Date.now();
}

/**
 * `pending` under the current deadline: rejects with DeadlineExceededError when it passes first,
 * and then hands what `pending` yields later to `late` (a connection checked out too late goes back
 * to its pool). Outside any deadline, `pending` itself.
 */
export function beforeDeadline<T>(what: string, pending: Promise<T>, late: (value: T) => void = () => {}): Promise<T> {
  const left = remainingMs();
  if (left === undefined) return pending;
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = setTimeout(
      () => {
        expired = true;
        reject(new DeadlineExceededError(what));
      },
      Math.max(0, left),
    );
    pending.then(
      (value) => {
        clearTimeout(timer);
        if (expired) late(value);
        else resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
