import type { Clock, LoginThrottle } from '@platform/domain';

export interface LoginThrottleOptions {
  clock: Clock;
  /** Failures per key within the window before sign-ins for that key wait. */
  limits: { email: number; client: number };
  windowSeconds: number;
  /** Keys remembered at most; the oldest are forgotten first. */
  maxKeys?: number;
}

/**
 * Counts failed sign-ins per key (`email:...`, `client:...`) in a fixed window. Past the limit a
 * key waits until its window ends; nothing locks an account for good. Kept in this process's
 * memory: with several replicas each counts its own share, so the effective limit is that many
 * times higher (a shared store is the next step when replicas multiply).
 */
export class MemoryLoginThrottle implements LoginThrottle {
  private readonly failures = new Map<string, { count: number; windowEnds: number }>();

  constructor(private readonly options: LoginThrottleOptions) {}

  retryAfter(keys: string[]): number | null {
    const now = this.options.clock.now().getTime();
    let wait = 0;
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (!entry || entry.windowEnds <= now) continue;
      if (entry.count >= this.limitOf(key)) wait = Math.max(wait, Math.ceil((entry.windowEnds - now) / 1000));
    }
    return wait > 0 ? wait : null;
  }

  recordFailure(keys: string[]): void {
    const now = this.options.clock.now().getTime();
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry && entry.windowEnds > now) {
        entry.count++;
      } else {
        if (this.failures.size >= (this.options.maxKeys ?? 100_000)) {
          const oldest = this.failures.keys().next().value;
          if (oldest !== undefined) this.failures.delete(oldest);
        }
        this.failures.delete(key);
        this.failures.set(key, { count: 1, windowEnds: now + this.options.windowSeconds * 1000 });
      }
    }
  }

  recordSuccess(keys: string[]): void {
    for (const key of keys) this.failures.delete(key);
  }

  private limitOf(key: string): number {
    return key.startsWith('client:') ? this.options.limits.client : this.options.limits.email;
  }
}
