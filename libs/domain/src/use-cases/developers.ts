import { assertEmail, assertPassword, cleanPersonName, isEmail, PASSWORD_MAX_LENGTH } from '../account-rules.js';
import { RateLimitedError } from '../errors.js';
import type { Developer } from '../model.js';
import { hashPassword } from '../password-hashing.js';
import type { DeveloperRepository } from '../ports.js';
import { signInWithPassword, type PasswordSignInDeps } from './password-sign-in.js';

export interface DeveloperAccountDeps extends PasswordSignInDeps {
  developers: DeveloperRepository;
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
  // Every sign-up costs a password hash: each one spends the address's budget, as a failed sign-in does.
  const wait = await deps.throttle.spend(clientAddress);
  if (wait !== null) throw new RateLimitedError(wait, 'Too many sign-ups from here; try again later');
  const email = input.email.trim();
  assertEmail(email);
  assertPassword(input.password);
  const name = cleanPersonName(input.name);
  const passwordHash = await hashPassword(deps.hasher, { account: `developer-email:${email.toLowerCase()}`, address: clientAddress }, input.password);
  return deps.developers.createWithPassword({ email, name, passwordHash });
}

/**
 * Password sign-in of a developer. Every failure (no account, no password set, wrong password)
 * costs one verification and reads the same; repeated failures wait (429), as user sign-in's do.
 */
export async function authenticateDeveloper(
  deps: DeveloperAccountDeps,
  credentials: { email: string; password: string },
  clientAddress: string,
): Promise<Developer> {
  const email = credentials.email.trim();
  // No account has such an email or so long a password: that input fails as an unknown account
  // does, without a lookup, and the stand-in verification stays bounded.
  const couldMatch = isEmail(email) && credentials.password.length <= PASSWORD_MAX_LENGTH;
  return signInWithPassword(deps, {
    password: credentials.password.slice(0, PASSWORD_MAX_LENGTH),
    typedKey: `developer-email:${email.toLowerCase()}`,
    address: clientAddress,
    findAccount: async () => {
      const found = couldMatch ? await deps.developers.findCredentials(email) : null;
      return found && { account: found.developer, throttleKey: `developer:${found.developer.id}`, passwordHash: found.passwordHash };
    },
  });
}
