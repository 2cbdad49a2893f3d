import { createHash } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FailureCount, SignInFailureStore } from '@platform/domain';

const digestOf = (key: string) => createHash('sha256').update(key).digest('hex');
const placeholders = (count: number, each: string) => Array.from({ length: count }, () => each).join(', ');

/**
 * Sign-in failure counters in the control plane, so every replica of an app sees the same counts.
 * Each write is one statement; counters of keys written together are locked in digest order, so
 * concurrent failures never deadlock. Counters past their memory are deleted now and then (at most
 * once per `pruneEveryMs` per process), and never read meanwhile.
 */
export class SqlSignInFailureStore implements SignInFailureStore {
  private lastPrune = 0;

  constructor(
    private readonly orm: MikroORM,
    private readonly pruneEveryMs = 60_000,
  ) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async read(keys: string[], since: Date): Promise<Map<string, FailureCount>> {
    const keyOf = new Map(keys.map((key) => [digestOf(key), key]));
    const rows = await this.execute<{ digest: string; failures: number; last_failure: Date | string }>(
      `select encode(key_digest, 'hex') as digest, failures, last_failure from sign_in_failures
       where key_digest in (${placeholders(keyOf.size, `decode(?, 'hex')`)}) and last_failure > ?`,
      [...keyOf.keys(), since],
    );
    const counts = new Map<string, FailureCount>();
    for (const row of rows) {
      const key = keyOf.get(row.digest);
      if (key !== undefined) counts.set(key, { failures: row.failures, lastFailure: new Date(row.last_failure) });
    }
    return counts;
  }

  async record(keys: string[], now: Date, since: Date): Promise<void> {
    const digests = [...new Set(keys.map(digestOf))].sort();
    await this.execute(
      `insert into sign_in_failures (key_digest, failures, last_failure)
       values ${placeholders(digests.length, `(decode(?, 'hex'), 1, ?::timestamptz)`)}
       on conflict (key_digest) do update set
         failures = case when sign_in_failures.last_failure > ? then sign_in_failures.failures + 1 else 1 end,
         last_failure = greatest(sign_in_failures.last_failure, excluded.last_failure)`,
      [...digests.flatMap((digest) => [digest, now]), since],
    );
    if (now.getTime() - this.lastPrune >= this.pruneEveryMs) {
      this.lastPrune = now.getTime();
      await this.execute(`delete from sign_in_failures where last_failure <= ?`, [since]);
    }
  }

  async forget(key: string): Promise<void> {
    await this.execute(`delete from sign_in_failures where key_digest = decode(?, 'hex')`, [digestOf(key)]);
  }
}
