import { assertPassword } from '../account-rules.js';
import { ForbiddenError, NotFoundError, RateLimitedError, UnauthenticatedError } from '../errors.js';
import type { LoginThrottle, PasswordHasher, UserPatch, UserTokenIssuer } from '../data-plane.js';
import type { LoginResult, Principal, Tenant, User } from '../model.js';
import { requireUser } from '../authorization.js';
import {
  accessDatabase,
  accessTenant,
  locateForSignIn,
  sessionEnded,
  type DataPlaneDeps,
  type DatabaseAccess,
  type TenantPath,
} from './tenants.js';

export interface SignInDeps extends DataPlaneDeps {
  hasher: PasswordHasher;
  tokens: UserTokenIssuer;
  throttle: LoginThrottle;
  sessionTtlSeconds: number;
}

export interface SignUpInput extends UserPatch {
  email: string;
  password: string;
}

function authenticationFailed(): UnauthenticatedError {
  return new UnauthenticatedError('authentication_failed', 'Email or password is incorrect');
}

function userNotFound(id: string): NotFoundError {
  return new NotFoundError('user_not_found', `User '${id}' not found`);
}

async function startSession(deps: SignInDeps, access: DatabaseAccess, user: User): Promise<LoginResult> {
  const session = await access.data.sessions.create(user.id, deps.sessionTtlSeconds);
  const token = await deps.tokens.issue({ userId: user.id, databaseId: access.database.id, sessionId: session.id });
  const tenantIds = await access.data.users.tenantIds(user.id);
  return {
    user,
    tenantIds,
    token: { jwt: token.jwt, maxAge: token.maxAge, type: 'ACCESS_TOKEN' },
    session: { token: session.token, maxAge: deps.sessionTtlSeconds },
  };
}

/** A user whose session is live, or a 401. */
async function requireLiveSession(access: DatabaseAccess, caller: Principal): Promise<void> {
  if (caller.kind === 'user' && !(await access.data.sessions.isLive(caller.sessionId, caller.userId))) throw sessionEnded();
}

/**
 * Creates a user with a password as a member of the tenant and signs them in. A developer or a
 * member of the tenant may do it (SPEC POST T/users).
 */
export async function signUp(deps: SignInDeps, caller: Principal, path: TenantPath, input: SignUpInput): Promise<LoginResult> {
  assertPassword(input.password);
  const access = await accessTenant(deps, caller, path);
  const passwordHash = await deps.hasher.hash(input.password);
  const user = await access.data.users.create({ ...input, passwordHash }, access.tenant.id);
  return startSession(deps, access, user);
}

/**
 * Password sign-in to a database, or to one tenant of it. Every failure (no such database or
 * user, wrong password, not a member) costs one password verification and answers the same 401;
 * repeated failures per email and per client address answer 429 for a while.
 */
export async function signIn(
  deps: SignInDeps,
  path: { workspaceSlug: string; databaseName: string; tenantId?: string },
  credentials: { email: string; password: string },
  clientAddress: string,
): Promise<LoginResult> {
  const emailKey = `email:${path.workspaceSlug}/${path.databaseName}:${credentials.email.trim().toLowerCase()}`;
  const keys = [emailKey, `client:${clientAddress}`];
  const wait = deps.throttle.acquire(keys);
  if (wait !== null) throw new RateLimitedError(wait);

  let access: DatabaseAccess;
  try {
    access = await locateForSignIn(deps, path.workspaceSlug, path.databaseName, authenticationFailed);
  } catch (error) {
    if (!(error instanceof UnauthenticatedError)) throw error;
    await deps.hasher.verifyNothing(credentials.password);
    throw authenticationFailed();
  }
  let found: Awaited<ReturnType<typeof access.data.users.findCredentials>>;
  try {
    found = await access.data.users.findCredentials(credentials.email.trim());
  } catch (error) {
    // Deleted a moment ago (a cached path still led here): a sign-in failure like any other.
    if (!(error instanceof NotFoundError)) throw error;
    await deps.hasher.verifyNothing(credentials.password);
    throw authenticationFailed();
  }
  // The email key follows the text sent; this one follows the account, whatever spelling of it.
  const userKeys = found ? [`user:${access.database.id}:${found.user.id}`] : [];
  const userWait = deps.throttle.acquire(userKeys);
  if (userWait !== null) throw new RateLimitedError(userWait);
  const passwordOk = found
    ? await deps.hasher.verify(credentials.password, found.passwordHash)
    : await deps.hasher.verifyNothing(credentials.password);
  if (!found || !passwordOk) throw authenticationFailed();
  if (path.tenantId !== undefined) {
    const tenantIds = await access.data.users.tenantIds(found.user.id);
    if (!tenantIds.includes(path.tenantId)) throw authenticationFailed();
  }
  deps.throttle.recordSuccess([...keys, ...userKeys]);
  return startSession(deps, access, found.user);
}

/** Ends the caller's session: its cookie and every token issued with it stop working. */
export async function signOut(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string): Promise<void> {
  const user = requireUser(caller);
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  await access.data.sessions.revoke(user.sessionId);
}

export async function listTenantUsers(deps: DataPlaneDeps, caller: Principal, path: TenantPath): Promise<User[]> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  return data.users.listMembers(tenant.id);
}

/** A user outside the tenant does not exist here, even when they exist in the database. */
export async function getTenantUser(deps: DataPlaneDeps, caller: Principal, path: TenantPath, userId: string): Promise<User> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  const members = await data.users.tenantIds(userId);
  const user = members.includes(tenant.id) ? await data.users.find(userId) : null;
  if (!user) throw userNotFound(userId);
  return user;
}

/** Developers see every user; a user sees themselves and the users they share a tenant with. */
async function visibleUser(access: DatabaseAccess, caller: Principal, userId: string): Promise<User> {
  await requireLiveSession(access, caller);
  const visible = caller.kind !== 'user' || caller.userId === userId || (await access.data.users.shareTenant(caller.userId, userId));
  const user = visible ? await access.data.users.find(userId) : null;
  if (!user) throw userNotFound(userId);
  return user;
}

export async function getDatabaseUser(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string, userId: string): Promise<User> {
  return visibleUser(await accessDatabase(deps, caller, workspaceSlug, databaseName), caller, userId);
}

/** Developers update any user; users only themselves (another visible user: 403). */
export async function updateDatabaseUser(
  deps: DataPlaneDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseName: string,
  userId: string,
  patch: UserPatch,
): Promise<User> {
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  await visibleUser(access, caller, userId);
  if (caller.kind === 'user' && caller.userId !== userId) {
    throw new ForbiddenError('not_your_profile', 'Users can only update their own profile');
  }
  const updated = await access.data.users.update(userId, patch);
  if (!updated) throw userNotFound(userId);
  return updated;
}

/** The signed-in user and the tenants they belong to. */
export async function currentUser(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string): Promise<{ user: User; tenantIds: string[] }> {
  const user = requireUser(caller);
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  const { sessionValid, tenants } = await access.data.tenants.listForUser(user.userId, user.sessionId);
  if (!sessionValid) throw sessionEnded();
  const found = await access.data.users.find(user.userId);
  if (!found) throw sessionEnded();
  return { user: found, tenantIds: tenants.map((tenant) => tenant.id) };
}

/**
 * Adds an existing user of the database to the tenant. Developers only: a member could otherwise
 * pull any user they know the id of into their tenant, and so see them.
 */
export async function linkUser(deps: DataPlaneDeps, caller: Principal, path: TenantPath, userId: string): Promise<User> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  if (caller.kind === 'user') throw new ForbiddenError('developer_token_required', 'Only a developer can add a user to a tenant');
  const user = await data.users.find(userId);
  if (!user) throw userNotFound(userId);
  await data.users.link(tenant.id, userId);
  return user;
}

/** Removes a user from the tenant: a developer may remove anyone, a member only themselves. */
export async function unlinkUser(deps: DataPlaneDeps, caller: Principal, path: TenantPath, userId: string): Promise<void> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  if (caller.kind === 'user' && caller.userId !== userId) {
    throw new ForbiddenError('developer_token_required', 'A member can only remove themselves from a tenant');
  }
  if (!(await data.users.unlink(tenant.id, userId))) throw userNotFound(userId);
}

/** The tenants of a user: any user's for a developer, only their own for a user. */
export async function listUserTenants(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string, userId: string): Promise<Tenant[]> {
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  await requireLiveSession(access, caller);
  if (caller.kind === 'user' && caller.userId !== userId) throw userNotFound(userId);
  if (!(await access.data.users.find(userId))) throw userNotFound(userId);
  const ids = new Set(await access.data.users.tenantIds(userId));
  return (await access.data.tenants.list()).filter((tenant) => ids.has(tenant.id));
}

/**
 * The cookie-authenticated v2 create (SPEC POST /v2/databases/{database}/tenants/{tenantId}/users):
 * a signed-in member of the tenant creates a user in it. The caller stays signed in as themselves.
 */
export async function createUserWithSession(
  deps: SignInDeps,
  sessionToken: string | undefined,
  path: { databaseId: string; tenantId: string },
  input: SignUpInput,
): Promise<User> {
  const database = await deps.locator.findById(path.databaseId);
  if (!sessionToken || !database || database.status !== 'READY') throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
  const data = deps.dataPlane.open(database);
  const session = await data.sessions.findByToken(sessionToken);
  if (!session) throw new UnauthenticatedError('invalid_session', 'The session is not valid');
  const { sessionValid, member } = await data.users.access(session.userId, session.id, path.tenantId);
  if (!sessionValid) throw sessionEnded();
  if (!member) throw new NotFoundError('tenant_not_found', `Tenant '${path.tenantId}' not found`);
  assertPassword(input.password);
  const passwordHash = await deps.hasher.hash(input.password);
  return data.users.create({ ...input, passwordHash }, path.tenantId);
}
