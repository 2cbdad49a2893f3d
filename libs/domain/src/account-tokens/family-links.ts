import { RateLimitedError } from '../errors.js';
import type { LoginResult } from '../model.js';
import { familyDatabase } from '../use-cases/family-auth.js';
import { sessionEnded, type SignedInUser } from '../use-cases/membership.js';
import { startSession, type SignInDeps } from '../use-cases/users.js';
import { findTokenDatabase, foldEmail, invalidToken, lifetimes, requireTokenDatabase, type AccountTokenDeps } from './account-token-deps.js';

/*
 * What the API family's SDK needs around the one-time tokens (README "Apps built on the family's
 * SDK"): the mailed reset link is exchanged for a cookie before the new password is chosen, a
 * signed-in user may change their own password through the SDK's resetPassword, and a token that
 * did its work (a reset, an accepted invite) signs its user in.
 */

/** A new session for the user a one-time token just vouched for (a password reset, an accepted invite). */
export async function startTokenSession(deps: SignInDeps, databaseId: string, userId: string): Promise<LoginResult> {
  const access = await familyDatabase(deps, databaseId);
  const user = await access.data.users.find(userId);
  if (!user) throw invalidToken();
  return startSession(deps, access, user);
}

/** A reset link's token must be live for this address (400 `invalid_one_time_token`); reads only, the reset uses it up. */
export async function assertPasswordResetToken(deps: AccountTokenDeps, input: { databaseId: string; token: string; email: string }): Promise<void> {
  const found = await findTokenDatabase(deps, input.databaseId);
  const live = found && (await found.account.tokens.find(input.token, { purpose: 'password_reset', email: foldEmail(input.email) }));
  if (!live) throw invalidToken();
}

/**
 * A reset token for the signed-in user's own account, handed to them rather than mailed: their
 * live session proves the account as the inbox would (the SDK's resetPassword asks for the token
 * this way). Throttled like the mailed reset (429 `too_many_attempts`); 401 when the session ended.
 */
export async function ownPasswordResetToken(
  deps: AccountTokenDeps,
  caller: SignedInUser,
  input: { databaseId: string; clientAddress: string },
): Promise<{ token: string; email: string }> {
  const { data, account } = await requireTokenDatabase(deps, input.databaseId);
  if (!(await data.sessions.isLive(caller.sessionId, caller.userId))) throw sessionEnded();
  const user = await data.users.find(caller.userId);
  if (!user) throw sessionEnded();
  const email = foldEmail(user.email);
  const wait = await deps.mailThrottle.spend({ account: `password_reset:${input.databaseId}:${email}`, address: input.clientAddress });
  if (wait !== null) throw new RateLimitedError(wait, 'Too many password reset requests; try again later');
  const { token } = await account.tokens.issue({ purpose: 'password_reset', userId: user.id, email }, lifetimes(deps).passwordResetSeconds);
  return { token, email: user.email };
}
