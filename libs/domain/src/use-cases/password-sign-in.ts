import type { PasswordHashing } from '../password-hashing.js';
import { RateLimitedError, UnauthenticatedError } from '../errors.js';
import type { LoginThrottle } from '../sign-in-throttling.js';

export interface PasswordSignInDeps {
  hasher: PasswordHashing;
  throttle: LoginThrottle;
}

/** An account found for a sign-in, with what the password is checked against. */
export interface PasswordAccount<A> {
  account: A;
  /** The account's own throttle key: the typed email has many spellings, the account one. */
  throttleKey: string;
  /** null when the account has no password (it signs in some other way). */
  passwordHash: string | null;
}

export interface PasswordAttempt<A> {
  password: string;
  /** The throttle key of the name as typed (folded), for an attempt that names no account. */
  typedKey: string;
  /** The client's address. */
  address: string;
  /** The database whose user signs in (its `workspace/name`), for its share of the hashing queue; absent for developers. */
  database?: string;
  /** The account the attempt names, or null when there is none (nor anything to look it up in). */
  findAccount(): Promise<PasswordAccount<A> | null>;
  /** A last check once the password matched (tenant membership, say); false fails like a wrong password. */
  admits?(account: A): Promise<boolean>;
}

/** Every sign-in failure reads the same, so no answer tells which emails have accounts. */
export function authenticationFailed(): UnauthenticatedError {
  return new UnauthenticatedError('authentication_failed', 'Email or password is incorrect');
}

/**
 * Throttled password sign-in, for users and developers alike (the policy: sign-in-throttling.ts).
 * A place in the hashing queue comes first (password-hashing.ts), before anything is read: an
 * attempt past its account's, address's or database's share answers 429 at once and costs
 * nothing. The account is looked up next (one indexed read, the connection given back before
 * the hash), so its failures count however its email is spelled; an unknown name is throttled by
 * its typed key exactly as an account would be. Every failure costs exactly one password
 * verification, a stand-in one when there is no account, so timing tells nothing, and throws the
 * same 401; a wait answers 429 before any verification.
 */
export async function signInWithPassword<A>(deps: PasswordSignInDeps, attempt: PasswordAttempt<A>): Promise<A> {
  const place = await deps.hasher.admit({ account: attempt.typedKey, address: attempt.address, ...(attempt.database ? { database: attempt.database } : {}) });
  try {
    const found = await attempt.findAccount();
    const subject = { account: found ? found.throttleKey : attempt.typedKey, address: attempt.address };
    const outcome = await deps.throttle.attempt(subject, async () => {
      const passwordOk = found?.passwordHash ? await place.verify(attempt.password, found.passwordHash) : await place.verifyNothing(attempt.password);
      if (!found || !passwordOk) return false;
      return attempt.admits ? attempt.admits(found.account) : true;
    });
    if ('wait' in outcome) throw new RateLimitedError(outcome.wait);
    if (!outcome.ok || !found) throw authenticationFailed();
    return found.account;
  } finally {
    place.release();
  }
}
