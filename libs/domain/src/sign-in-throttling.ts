/**
 * Password sign-in throttling: failures only are counted, per account, per (account, address)
 * pair and per address, and an attempt waits (429, Retry-After) only when a counter it shares is
 * past its limit. The wait doubles with every failure past the limit, up to a ceiling. A correct
 * password from an address with no failures for the account therefore always gets through, unless
 * that address is failing for many accounts at once.
 */

/** What the platform learned of one key's failures. */
export interface FailureCount {
  failures: number;
  lastFailure: Date;
}

/** When sign-ins start waiting and for how long (README "Sign-in throttling"). */
export interface SignInPolicy {
  /** Failures for one account from one address before that pair waits. */
  pairFailuresBeforeDelay: number;
  /**
   * Failures for one account from all addresses before every address that has failed for it
   * waits after each failure (a guessing attack spread over many addresses).
   */
  accountFailuresBeforeDelay: number;
  /** Failures from one address, across accounts, before that address waits. */
  addressFailuresBeforeDelay: number;
  /** The first wait; each further failure doubles it. */
  firstDelaySeconds: number;
  maxDelaySeconds: number;
  /** A key's failures are forgotten this long after its last one (longer than the longest wait). */
  memorySeconds: number;
}

/** The counters an attempt is judged by; the account's two are absent for an address alone. */
export interface AttemptCounts {
  pair?: FailureCount;
  account?: FailureCount;
  address?: FailureCount;
}

/** The wait after `excess + 1` failures past a limit: first, doubled `excess` times, capped. */
export function delaySeconds(policy: Pick<SignInPolicy, 'firstDelaySeconds' | 'maxDelaySeconds'>, excess: number): number {
  // 2^31 overflows nothing in a double, and every cap fits well below it.
  return Math.min(policy.maxDelaySeconds, policy.firstDelaySeconds * 2 ** Math.min(excess, 31));
}

/**
 * The whole seconds an attempt must wait before its password is checked, or null to go ahead.
 * Counters older than the policy's memory should not be passed (the store drops them).
 */
export function signInWait(policy: SignInPolicy, counts: AttemptCounts, now: Date): number | null {
  let until = 0;
  const { pair, account, address } = counts;
  // The account's counters only ever hold back an address that has failed for that account.
  if (pair && pair.failures > 0) {
    const excess = Math.max(pair.failures - policy.pairFailuresBeforeDelay, (account?.failures ?? 0) - policy.accountFailuresBeforeDelay);
    if (excess >= 0) until = pair.lastFailure.getTime() + delaySeconds(policy, excess) * 1000;
  }
  if (address) {
    const excess = address.failures - policy.addressFailuresBeforeDelay;
    if (excess >= 0) until = Math.max(until, address.lastFailure.getTime() + delaySeconds(policy, excess) * 1000);
  }
  const wait = Math.ceil((until - now.getTime()) / 1000);
  return wait > 0 ? wait : null;
}

/**
 * Failure counters shared by every replica (the control plane). Keys are opaque strings; a store
 * may keep them hashed.
 */
export interface SignInFailureStore {
  /** The counters of `keys` whose last failure is after `since`; others are absent. */
  read(keys: string[], since: Date): Promise<Map<string, FailureCount>>;
  /** One more failure for each key, at `now`; a counter whose last failure is not after `since` restarts at one. */
  record(keys: string[], now: Date, since: Date): Promise<void>;
  forget(key: string): Promise<void>;
}

/** Who attempts a sign-in: the account it names (absent for an address-only budget) and from where. */
export interface SignInSubject {
  /** The account's own key when it exists, else the name as typed (folded), so unknown names are throttled alike. */
  account?: string;
  address: string;
}

export type SignInOutcome = { wait: number } | { ok: boolean };

/** The throttle password sign-in goes through (users on apps/api, developers on apps/oauth). */
export interface LoginThrottle {
  /**
   * Settles one attempt. Attempts of the same subject take turns within a process, so concurrent
   * guesses see each other's failures. Answers the seconds to wait (and runs nothing), or runs
   * `verify` and counts its outcome: false is a failure of the account, the pair and the address;
   * true forgets the pair's failures.
   */
  attempt(subject: SignInSubject, verify: () => Promise<boolean>): Promise<SignInOutcome>;
  /**
   * Spends one of the address's sign-up budget (a sign-up hashes a password, as a failed sign-in
   * costs a verification): counted as failures are, against the address limit, apart from
   * sign-in failures. Answers the seconds to wait when the budget is spent.
   */
  spend(address: string): Promise<number | null>;
}
