import { assertEmail, assertPassword } from '../account-rules.js';
import { RateLimitedError } from '../errors.js';
import { hashPassword } from '../password-hashing.js';
import { newUserClaim } from '../use-cases/users.js';
import { passwordResetMail } from './account-mails.js';
import { findTokenDatabase, foldEmail, invalidToken, lifetimes, linkWith, requireTokenDatabase, type AccountTokenDeps } from './account-token-deps.js';

/** A forgotten password: who asks, for which address, and where the mailed link leads. */
export interface PasswordResetRequest {
  databaseId: string;
  email: string;
  /** The client's address, whose requests are throttled across accounts. */
  clientAddress: string;
  /** The page the link opens (the app's reset form); `token` and `identifier` are added to its query. */
  linkBase: string;
}

/**
 * "Forgot password". Answers the same, nothing, whether or not the address has an account (or the
 * database exists), and takes the same time: the token and the mail are made after the answer
 * (deps.detach). Throttled per address asked about (whether it has an account or not, so the
 * throttle tells nothing either) and per client address (MailThrottle): past a budget, 429
 * `too_many_attempts` with the seconds to wait. A malformed address is 400 `invalid_email`.
 * The mail links to `linkBase?token=...&identifier=<email>`; the token works once, for
 * lifetimes.passwordResetSeconds (an hour by default).
 */
export async function requestPasswordReset(deps: AccountTokenDeps, request: PasswordResetRequest): Promise<void> {
  const email = foldEmail(request.email);
  assertEmail(email);
  linkWith(request.linkBase, 'x', email);
  const wait = await deps.mailThrottle.spend({ account: `password_reset:${request.databaseId}:${email}`, address: request.clientAddress });
  if (wait !== null) throw new RateLimitedError(wait, 'Too many password reset requests; try again later');
  const found = await findTokenDatabase(deps, request.databaseId);
  const user = found && (await found.data.users.findByEmail(email));
  if (!found || !user) return;
  const ttl = lifetimes(deps).passwordResetSeconds;
  deps.detach(
    (async () => {
      const { token } = await found.account.tokens.issue({ purpose: 'password_reset', userId: user.id, email: foldEmail(user.email) }, ttl);
      await deps.mailer.send(passwordResetMail(user.email, linkWith(request.linkBase, token, user.email), ttl));
    })(),
  );
}

/**
 * Sets a new password with the token of a reset mail. The password is checked first (400
 * `invalid_password`, the token left usable); a token that was used, expired, revoked or is not a
 * password reset token (of an account, when `email` is given, of that address) is 400
 * `invalid_one_time_token`, and so is a token whose account's address has changed since it was
 * mailed (it is used up). On success every session of the user ends (whoever knew the old
 * password is signed out) but `keepSessionId`, the session the reset was made from if it is the
 * user's own, and so do the user's other reset links. Answers the user's id; the caller may sign
 * them in.
 */
export async function resetPassword(
  deps: AccountTokenDeps,
  input: { databaseId: string; token: string; password: string; email?: string; keepSessionId?: string; clientAddress?: string },
): Promise<{ userId: string }> {
  assertPassword(input.password);
  const { account, database } = await requireTokenDatabase(deps, input.databaseId);
  const expect = { purpose: 'password_reset' as const, ...(input.email !== undefined ? { email: foldEmail(input.email) } : {}) };
  // Hashing costs the same whether the token is good: the answer's time says nothing about it.
  const claim = newUserClaim({ workspaceSlug: database.workspace.slug, databaseName: database.name }, input.email, input.clientAddress);
  const passwordHash = await hashPassword(deps.hasher, claim, input.password);
  const record = await account.tokens.consume(input.token, expect);
  if (!record?.userId) throw invalidToken();
  // The token holds only while the account's address is still the one it was mailed to.
  if (!(await account.secrets.setPassword(record.userId, record.email, passwordHash))) throw invalidToken();
  await account.secrets.endSessions(record.userId, input.keepSessionId);
  await account.tokens.revokeAll('password_reset', { userId: record.userId });
  return { userId: record.userId };
}
