import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '@platform/domain';

/** The wait after a first failure; each failure in a row doubles it, up to the store's cap. */
const RETRY_BASE_MS = 1_000;

export interface BackoffOptions {
  orm: MikroORM;
  clock: Clock;
  /** The claimed rows' table; it has `attempts`, `last_error` and `next_attempt_at`. */
  table: 'databases' | 'compute_instances';
  /** The longest wait between two attempts at one row. */
  retryCapMs: number;
  /** Runs after a failed claim's rollback, before its failure is recorded (to undo what was said outside the transaction). */
  onFailure?: (id: string) => Promise<void>;
}

/**
 * Runs `step` in a transaction of its own; `step` locks a row and names it through `claimed`
 * before it works on it. When the transaction fails after a claim, the row's failure is recorded
 * outside it (one more attempt, the error, the time before which no claim takes it again) and the
 * error is rethrown, so a failing row waits its turn instead of blocking the others. Answers
 * whether a row was claimed.
 */
export async function claimWithBackoff(options: BackoffOptions, step: (tx: EntityManager, claimed: (id: string) => void) => Promise<void>): Promise<boolean> {
  let claimedId: string | null = null;
  try {
    await options.orm.em.fork().transactional((tx) =>
      step(tx, (id) => {
        claimedId = id;
      }),
    );
  } catch (error) {
    if (claimedId === null) throw error;
    await options.onFailure?.(claimedId);
    await recordFailure(options, claimedId, error);
    throw error;
  }
  return claimedId !== null;
}

/**
 * The wait doubles from RETRY_BASE_MS with each failure in a row (`attempts` is the count before
 * this one) up to the cap. The exponent stops at 30, past any cap, so a row that fails for hours
 * never overflows the arithmetic (an integer 2^31 did, and then its failure was never recorded).
 */
async function recordFailure(options: BackoffOptions, id: string, error: unknown): Promise<void> {
  const message = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
  await options.orm.em.getConnection().execute(
    `update ${options.table} set attempts = attempts + 1, last_error = ?,
       next_attempt_at = ?::timestamptz + least(?::float8, ?::float8 * power(2, least(attempts, 30))) * interval '1 millisecond'
     where id = ?`,
    [message, options.clock.now(), options.retryCapMs, RETRY_BASE_MS, id],
  );
}
