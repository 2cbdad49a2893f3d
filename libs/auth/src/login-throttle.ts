import type { Clock, LoginThrottle } from '@platform/domain';
import { ScryptPasswordHasher } from './password-hasher.js';

interface Entry {
  count: number;
  windowEnds: number;
}

export interface LoginThrottleOptions {
  clock: Clock;
  /** Failures per key within the window before sign-ins for that key wait. */
  limits: { email: number; client: number };
  windowSeconds: number;
  /** Keys of each kind remembered at most; the oldest are forgotten first. */
  maxKeys?: number;
}

/**
 * Counts sign-in attempts per key (`email:...`, `client:...`) in a fixed window, from the moment
 * they start (`acquire`); a success takes its attempt back, so what remains counts failures. Past the limit a
 * key waits until its window ends; nothing locks an account for good. Kept in this process's
 * memory: with several replicas each counts its own share, so the effective limit is that many
 * times higher (a shared store is the next step when replicas multiply).
 */
export class MemoryLoginThrottle implements LoginThrottle {
  // One bounded map per kind of key: a flood of client addresses cannot evict email counters.
  private readonly byKind = { email: new Map<string, Entry>(), client: new Map<string, Entry>() };

  private mapOf(key: string): Map<string, Entry> {
    return key.startsWith('client:') ? this.byKind.client : this.byKind.email;
  }

  constructor(private readonly options: LoginThrottleOptions) {}

  retryAfter(keys: string[]): number | null {
    const now = this.options.clock.now().getTime();
    let wait = 0;
    for (const key of keys) {
      const entry = this.mapOf(key).get(key);
      if (!entry || entry.windowEnds <= now) continue;
      if (entry.count >= this.limitOf(key)) wait = Math.max(wait, Math.ceil((entry.windowEnds - now) / 1000));
    }
    return wait > 0 ? wait : null;
  }

  recordFailure(keys: string[]): void {
    const now = this.options.clock.now().getTime();
    for (const key of keys) {
      const entry = this.mapOf(key).get(key);
      if (entry && entry.windowEnds > now) {
        entry.count++;
      } else {
        const failures = this.mapOf(key);
        failures.delete(key);
        if (failures.size >= (this.options.maxKeys ?? 100_000)) {
          const oldest = failures.keys().next().value;
          if (oldest !== undefined) failures.delete(oldest);
        }
        failures.set(key, { count: 1, windowEnds: now + this.options.windowSeconds * 1000 });
      }
    }
  }

  acquire(keys: string[]): number | null {
    const wait = this.retryAfter(keys);
    if (wait === null) this.recordFailure(keys);
    return wait;
  }

  /** A success forgets its email keys and gives its client keys back the attempt `acquire` counted. */
  recordSuccess(keys: string[]): void {
    for (const key of keys) {
      const entry = this.mapOf(key).get(key);
      if (!entry) continue;
      if (key.startsWith('client:') && entry.count > 1) entry.count--;
      else this.mapOf(key).delete(key);
    }
  }

  private limitOf(key: string): number {
    return key.startsWith('client:') ? this.options.limits.client : this.options.limits.email;
  }
}

/**
 * The password hasher and sign-in throttle of an app that signs people in (users on apps/api,
 * developers on apps/oauth), from its sign-in settings.
 */
export function passwordSignIn(
  settings: { passwordHashLogN: number; login: { maxFailuresPerEmail: number; maxFailuresPerClient: number; windowSeconds: number } },
  clock: Clock,
): { hasher: ScryptPasswordHasher; throttle: MemoryLoginThrottle } {
  const hasher = new ScryptPasswordHasher(settings.passwordHashLogN);
  // Builds the stand-in hash now, so the first sign-in with an unknown email costs what others do.
  void hasher.verifyNothing('');
  const throttle = new MemoryLoginThrottle({
    clock,
    limits: { email: settings.login.maxFailuresPerEmail, client: settings.login.maxFailuresPerClient },
    windowSeconds: settings.login.windowSeconds,
  });
  return { hasher, throttle };
}
