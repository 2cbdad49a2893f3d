import type { LoginThrottle, PasswordHasher } from '../data-plane.js';
import { RateLimitedError, UnauthenticatedError, ValidationError } from '../errors.js';
import type { Developer } from '../model.js';
import type { DeveloperRepository } from '../ports.js';
import { assertPassword, isEmail, PASSWORD_MAX_LENGTH, PERSON_NAME_MAX_LENGTH } from '../account-rules.js';

export interface DeveloperAccountDeps {
  developers: DeveloperRepository;
  hasher: PasswordHasher;
  throttle: LoginThrottle;
}


function signInFailed(): UnauthenticatedError {
  return new UnauthenticatedError('authentication_failed', 'Email or password is incorrect');
}

/**
 * A developer account with a password. Emails are unique case-insensitively; a taken email is a
 * conflict (the page says so: sign-up cannot hide which emails have accounts, sign-in does).
 */
export async function signUpDeveloper(
  deps: DeveloperAccountDeps,
  input: { email: string; password: string; name?: string },
  clientAddress: string,
): Promise<Developer> {
  // Every sign-up costs a password hash: each one counts against the address, success or not.
  const wait = deps.throttle.acquire([`client:sign-up:${clientAddress}`]);
  if (wait !== null) throw new RateLimitedError(wait);
  const email = input.email.trim();
  if (!isEmail(email)) throw new ValidationError('invalid_email', 'Enter an email address such as ada@example.com');
  assertPassword(input.password);
  const name = input.name?.trim() || null;
  if (name !== null && name.length > PERSON_NAME_MAX_LENGTH) throw new ValidationError('invalid_name', `Name must be at most ${PERSON_NAME_MAX_LENGTH} characters`);
  const passwordHash = await deps.hasher.hash(input.password);
  return deps.developers.createWithPassword({ email, name, passwordHash });
}

/**
 * Password sign-in of a developer. Every failure (no account, no password set, wrong password)
 * costs one verification and reads the same; repeated failures per email, per account and per
 * client address wait (429), as user sign-in does.
 */
export async function authenticateDeveloper(
  deps: DeveloperAccountDeps,
  credentials: { email: string; password: string },
  clientAddress: string,
): Promise<Developer> {
  const email = credentials.email.trim();
  const keys = [`developer-email:${email.toLowerCase()}`, `client:${clientAddress}`];
  const wait = deps.throttle.acquire(keys);
  if (wait !== null) throw new RateLimitedError(wait);
  if (credentials.password.length > PASSWORD_MAX_LENGTH || !isEmail(email)) {
    await deps.hasher.verifyNothing(credentials.password.slice(0, PASSWORD_MAX_LENGTH));
    throw signInFailed();
  }
  const found = await deps.developers.findCredentials(email);
  const accountKeys = found ? [`developer:${found.developer.id}`] : [];
  const accountWait = deps.throttle.acquire(accountKeys);
  if (accountWait !== null) throw new RateLimitedError(accountWait);
  const ok = found?.passwordHash
    ? await deps.hasher.verify(credentials.password, found.passwordHash)
    : await deps.hasher.verifyNothing(credentials.password);
  if (!found || !ok) throw signInFailed();
  deps.throttle.recordSuccess([...keys, ...accountKeys]);
  return found.developer;
}
