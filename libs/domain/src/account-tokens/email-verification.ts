import { RateLimitedError, UnauthenticatedError } from '../errors.js';
import { sessionEnded, type SignedInUser } from '../use-cases/membership.js';
import { emailVerificationMail } from './account-mails.js';
import { foldEmail, invalidToken, lifetimes, linkWith, requireTokenDatabase, type AccountTokenDeps } from './account-token-deps.js';

/**
 * Mails a signed-in user a link that verifies their address. Throttled per account and client
 * address (429 `too_many_attempts`); a user whose address is verified already gets no mail and the
 * same answer, `{ sent: false }`. 401 `invalid_token` when the session has ended. Awaits the mail:
 * a failure to send is 502 `mail_delivery_failed`.
 */
export async function requestEmailVerification(
  deps: AccountTokenDeps,
  caller: SignedInUser,
  input: { databaseId: string; clientAddress: string; linkBase: string },
): Promise<{ sent: boolean }> {
  const { data, account } = await requireTokenDatabase(deps, input.databaseId);
  if (!(await data.sessions.isLive(caller.sessionId, caller.userId))) throw sessionEnded();
  const user = await data.users.find(caller.userId);
  if (!user) throw sessionEnded();
  if (user.emailVerified) return { sent: false };
  linkWith(input.linkBase, 'x', user.email);
  const wait = await deps.mailThrottle.spend({ account: `email_verification:${input.databaseId}:${user.id}`, address: input.clientAddress });
  if (wait !== null) throw new RateLimitedError(wait, 'Too many verification mails; try again later');
  const ttl = lifetimes(deps).emailVerificationSeconds;
  const { token } = await account.tokens.issue({ purpose: 'email_verification', userId: user.id, email: foldEmail(user.email) }, ttl);
  await deps.mailer.send(emailVerificationMail(user.email, linkWith(input.linkBase, token, user.email), ttl));
  return { sent: true };
}

/**
 * Verifies an address with the token of a verification mail: sets the user's email_verified. A
 * token used, expired, of another purpose, or (when `email` is given) for another address, or a
 * user whose address changed since the mail, is 400 `invalid_one_time_token`. When a signed-in
 * `caller` is given, the token must be theirs (another account's token is refused, unused).
 */
export async function verifyEmail(
  deps: AccountTokenDeps,
  input: { databaseId: string; token: string; email?: string; caller?: SignedInUser },
): Promise<{ userId: string }> {
  const { data, account } = await requireTokenDatabase(deps, input.databaseId);
  if (input.caller && !(await data.sessions.isLive(input.caller.sessionId, input.caller.userId))) {
    throw new UnauthenticatedError('invalid_token', 'The session of this token has ended');
  }
  const record = await account.tokens.consume(input.token, {
    purpose: 'email_verification',
    ...(input.email !== undefined ? { email: foldEmail(input.email) } : {}),
    ...(input.caller ? { userId: input.caller.userId } : {}),
  });
  if (!record?.userId || !(await account.secrets.markEmailVerified(record.userId, record.email))) throw invalidToken();
  return { userId: record.userId };
}
