import type { LoginThrottle, PasswordHasher } from '../data-plane.js';
import { RateLimitedError, UnauthenticatedError } from '../errors.js';

export interface PasswordSignInDeps {
  hasher: PasswordHasher;
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
  /** The keys of the attempt as sent: the typed email's and the client address's. */
  keys: string[];
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
 * Throttled password sign-in, for users and developers alike. Attempts count when they start,
 * per key (429 while a key waits). Every failure costs exactly one password verification, a
 * stand-in one when there is no account, so timing tells nothing, and throws the same 401.
 */
export async function signInWithPassword<A>(deps: PasswordSignInDeps, attempt: PasswordAttempt<A>): Promise<A> {
  acquireOrWait(deps.throttle, attempt.keys);
  const found = await attempt.findAccount();
  const accountKeys = found ? [found.throttleKey] : [];
  acquireOrWait(deps.throttle, accountKeys);
  const passwordOk = found?.passwordHash
    ? await deps.hasher.verify(attempt.password, found.passwordHash)
    : await deps.hasher.verifyNothing(attempt.password);
  if (!found || !passwordOk) throw authenticationFailed();
  if (attempt.admits && !(await attempt.admits(found.account))) throw authenticationFailed();
  deps.throttle.recordSuccess([...attempt.keys, ...accountKeys]);
  return found.account;
}

function acquireOrWait(throttle: LoginThrottle, keys: string[]): void {
  if (keys.length === 0) return;
  const wait = throttle.acquire(keys);
  if (wait !== null) throw new RateLimitedError(wait);
}
