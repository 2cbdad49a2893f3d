import { addressKey, signInWait, type Clock, type HashingPolicy, type LoginThrottle, type SignInFailureStore, type SignInOutcome, type SignInPolicy, type SignInSubject } from '@platform/domain';
import { FairHashingQueue } from './hashing-queue.js';
import { ScryptPasswordHasher } from './password-hasher.js';

export { addressKey };

/**
 * The sign-in throttle: the policy of sign-in-throttling.ts over counters kept in a store shared
 * by every replica. Attempts by the same account from the same address take turns in this process
 * (a queue, not a refusal), so a burst of concurrent guesses is judged one by one and the limit
 * holds; with several replicas, at most one attempt per replica is judged at once.
 */
export class SignInThrottle implements LoginThrottle {
  private readonly turns = new Map<string, Promise<void>>();

  constructor(
    private readonly store: SignInFailureStore,
    private readonly policy: SignInPolicy,
    private readonly clock: Clock,
  ) {}

  attempt(subject: SignInSubject, verify: () => Promise<boolean>): Promise<SignInOutcome> {
    const keys = keysOf(subject);
    const previous = this.turns.get(keys.pair) ?? Promise.resolve();
    const settled = previous.then(() => this.settle(keys, verify));
    const done = settled.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(keys.pair, done);
    void done.then(() => {
      if (this.turns.get(keys.pair) === done) this.turns.delete(keys.pair);
    });
    return settled;
  }

  async spend(address: string): Promise<number | null> {
    // Sign-ups have a budget of their own: an office signing its people up keeps its sign-ins.
    const key = `sign-ups:${addressKey(address)}`;
    const now = this.clock.now();
    const counts = await this.store.read([key], this.since(now));
    const wait = signInWait(this.policy, { address: counts.get(key) }, now);
    if (wait === null) await this.store.record([key], now, this.since(now));
    return wait;
  }

  /** How many attempts are taking turns here (each key once): for tests of the queue's cleanup. */
  get queued(): number {
    return this.turns.size;
  }

  private async settle(keys: SubjectKeys, verify: () => Promise<boolean>): Promise<SignInOutcome> {
    const now = this.clock.now();
    const counts = await this.store.read([keys.pair, keys.account, keys.address], this.since(now));
    const wait = signInWait(this.policy, { pair: counts.get(keys.pair), account: counts.get(keys.account), address: counts.get(keys.address) }, now);
    if (wait !== null) return { wait };
    const ok = await verify();
    const after = this.clock.now();
    if (ok) await this.store.forget(keys.pair);
    else await this.store.record([keys.pair, keys.account, keys.address], after, this.since(after));
    return { ok };
  }

  private since(now: Date): Date {
    return new Date(now.getTime() - this.policy.memorySeconds * 1000);
  }
}

interface SubjectKeys {
  pair: string;
  account: string;
  address: string;
}

function keysOf(subject: SignInSubject): SubjectKeys {
  const address = addressKey(subject.address);
  const account = subject.account ?? '';
  return { pair: `pair:${address} ${account}`, account: `account:${account}`, address: `address:${address}` };
}

/**
 * The password hashing queue and sign-in throttle of an app that signs people in (users on
 * apps/api, developers on apps/oauth), from its sign-in settings, counting failures in `store`.
 * Every hash of the app goes through the one queue, whatever route asks for it.
 */
export function passwordSignIn(
  settings: { passwordHashLogN: number; login: SignInPolicy; hashing?: Partial<HashingPolicy> },
  store: SignInFailureStore,
  clock: Clock,
): { hasher: FairHashingQueue; throttle: SignInThrottle } {
  const scrypt = new ScryptPasswordHasher(settings.passwordHashLogN);
  // Builds the stand-in hash now, so the first sign-in with an unknown email costs what others do.
  void scrypt.verifyNothing('');
  // The queue's first estimate of a hash: about 150 ms at logN 15 here, halving with each step down.
  const costMs = 150 / 2 ** (15 - settings.passwordHashLogN);
  return { hasher: new FairHashingQueue(scrypt, settings.hashing, costMs), throttle: new SignInThrottle(store, settings.login, clock) };
}
