import type { LoginResult } from '../model.js';
import { familyDatabase } from '../use-cases/family-auth.js';
import { startSession, type SignInDeps } from '../use-cases/users.js';
import { findTokenDatabase, foldEmail, invalidToken, type AccountTokenDeps } from './account-token-deps.js';

/*
 * What the API family's SDK needs around the one-time tokens (README "Apps built on the family's
 * SDK"): the mailed reset link is exchanged for a cookie before the new password is chosen, and
 * a token that did its work (a reset, an accepted invite) signs its user in. A session alone never
 * gets a reset token: whoever stole a session cookie must not change the password.
 */

/** A new session for the user a one-time token just vouched for (a password reset, an accepted invite). */
export async function startTokenSession(deps: SignInDeps, databaseId: string, userId: string): Promise<LoginResult> {
  const access = await familyDatabase(deps, databaseId);
  const user = await access.data.users.find(userId);
  if (!user) throw invalidToken();
  return startSession(deps, access, user);
}

/**
 * A reset link's token must be live for this address, and the account's address must still be
 * the one it was mailed to (400 `invalid_one_time_token`); reads only, the reset uses it up.
 */
export async function assertPasswordResetToken(deps: AccountTokenDeps, input: { databaseId: string; token: string; email: string }): Promise<void> {
  const found = await findTokenDatabase(deps, input.databaseId);
  const live = found && (await found.account.tokens.find(input.token, { purpose: 'password_reset', email: foldEmail(input.email) }));
  const user = found && live?.userId ? await found.data.users.find(live.userId) : null;
  if (!live || !user || foldEmail(user.email) !== live.email) throw invalidToken();
}
