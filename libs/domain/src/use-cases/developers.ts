import type { LoginThrottle, PasswordHasher } from '../data-plane.js';
import { RateLimitedError, UnauthenticatedError, ValidationError } from '../errors.js';
import type { Developer } from '../model.js';
import type { DeveloperRepository } from '../ports.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './users.js';

export interface DeveloperAccountDeps {
  developers: DeveloperRepository;
  hasher: PasswordHasher;
  throttle: LoginThrottle;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const NAME_MAX_LENGTH = 255;

function signInFailed(): UnauthenticatedError {
  return new UnauthenticatedError('Email or password is incorrect', 'authentication_failed');
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
  if (!EMAIL.test(email)) throw new ValidationError('invalid_email', 'Enter an email address such as ada@example.com');
  if (input.password.length < PASSWORD_MIN_LENGTH || input.password.length > PASSWORD_MAX_LENGTH) {
    throw new ValidationError('invalid_password', `Password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
  }
  const name = input.name?.trim() || null;
  if (name !== null && name.length > NAME_MAX_LENGTH) throw new ValidationError('invalid_name', `Name must be at most ${NAME_MAX_LENGTH} characters`);
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
  if (credentials.password.length > PASSWORD_MAX_LENGTH || !EMAIL.test(email)) {
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
