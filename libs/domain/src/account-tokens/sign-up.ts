import { assertEmail } from '../account-rules.js';
import { ConflictError, RateLimitedError } from '../errors.js';
import type { MailPolicy } from '../mail-throttling.js';
import { allowedSignUp, createSignedUpUser, type FamilyAuthDeps, type FamilySignUpInput } from '../use-cases/family-auth.js';
import { accountExistsMail } from './account-mails.js';
import { foldEmail, type AccountTokenDeps } from './account-token-deps.js';

/**
 * Sign-up's budgets: 3 tries per address, then a wait (a minute, doubling to an hour); 100 per
 * client address a day before it waits, more than mail's 20, as an office behind one address signs
 * up its people on one morning. Counted apart from mail.
 */
export const SIGN_UP_POLICY: MailPolicy = {
  accountMailsBeforeDelay: 3,
  addressMailsBeforeDelay: 100,
  firstDelaySeconds: 60,
  maxDelaySeconds: 3600,
  memorySeconds: 86_400,
};

/**
 * Public self sign-up (POST /v2/databases/{id}/signup, and POST /users without a tenant) as the
 * API family's SDK drives it: the rules of allowedSignUp, throttled per address signed up and per
 * client address (SIGN_UP_POLICY, deps.signUpThrottle: 429 `too_many_attempts` with the seconds
 * to wait), and an address that has an account is told to its owner by mail.
 *
 * Such an address still answers 409 `email_taken`. The SDK's signUp reads any 2xx as signed in
 * (it throws without a session cookie) and any other status as a refusal, so no answer to an
 * existing address can look like a new account's without signing someone in; a sign-up that
 * answered the same either way would need its account confirmed by mail before the first
 * session, which the SDK's signUp cannot express. What remains: the per-address and per-client
 * budgets make probing slow, and the owner learns of every attempt (the mail goes out after the
 * answer, which therefore takes no longer for an existing address).
 */
export async function selfSignUp(
  deps: FamilyAuthDeps & AccountTokenDeps,
  databaseId: string,
  input: FamilySignUpInput,
  clientAddress: string,
  options: { signIn: boolean } = { signIn: true },
): ReturnType<typeof createSignedUpUser> {
  const email = foldEmail(input.email);
  assertEmail(email);
  // Refusals that need no budget come first: a closed or unknown database must not let anyone
  // use up an address's sign-ups before its owner opens sign-up, nor write throttle rows.
  const access = await allowedSignUp(deps, databaseId, input);
  const wait = await (deps.signUpThrottle ?? deps.mailThrottle).spend({ account: `sign_up:${databaseId}:${email}`, address: clientAddress });
  if (wait !== null) throw new RateLimitedError(wait, 'Too many sign-up attempts; try again later');
  try {
    return await createSignedUpUser(deps, access, input, { ...options, clientAddress });
  } catch (error) {
    if (error instanceof ConflictError && error.code === 'email_taken') deps.detach(deps.mailer.send(accountExistsMail(input.email.trim())));
    throw error;
  }
}
