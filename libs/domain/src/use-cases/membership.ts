import type { DataPlaneRepositories, UserRepository } from '../data-plane.js';
import { NotFoundError, UnauthenticatedError } from '../errors.js';
import type { Principal, Tenant } from '../model.js';

/*
 * Who belongs to which tenant, and whether a signed-in user's session still holds, decided here
 * once. Memberships and sessions are read on every request, so removing a member or ending a
 * session takes effect at once.
 */

/** A user signed in through one session: a user token's principal, or a session cookie's owner. */
export interface SignedInUser {
  userId: string;
  sessionId: string;
}

/** Whatever reaches one database's built-in tables. */
export interface DataPlaneAccess {
  data: DataPlaneRepositories;
}

export function sessionEnded(): UnauthenticatedError {
  return new UnauthenticatedError('invalid_token', 'The session of this token has ended');
}

export function tenantNotFound(id: string): NotFoundError {
  return new NotFoundError('tenant_not_found', `Tenant '${id}' not found`);
}

/** A user caller's session must still be live (401 otherwise); developers and clients have none. */
export async function requireLiveSession(access: DataPlaneAccess, caller: Principal): Promise<void> {
  if (caller.kind === 'user' && !(await access.data.sessions.isLive(caller.sessionId, caller.userId))) throw sessionEnded();
}

/** A user reaches a tenant only as a live member; otherwise it does not exist for them. */
export async function requireMembership(access: DataPlaneAccess, user: SignedInUser, tenantId: string): Promise<void> {
  const { sessionValid, member } = await access.data.users.access(user.userId, user.sessionId, tenantId);
  if (!sessionValid) throw sessionEnded();
  if (!member) throw tenantNotFound(tenantId);
}

/** The tenants a signed-in user belongs to, read with their session (401 once it has ended). */
export async function tenantsOfSession(access: DataPlaneAccess, user: SignedInUser): Promise<Tenant[]> {
  const { sessionValid, tenants } = await access.data.tenants.listForUser(user.userId, user.sessionId);
  if (!sessionValid) throw sessionEnded();
  return tenants;
}

/** Whether a user, whoever is asking, belongs to the tenant. */
export async function isMember(users: UserRepository, userId: string, tenantId: string): Promise<boolean> {
  return (await users.tenantIds(userId)).includes(tenantId);
}
