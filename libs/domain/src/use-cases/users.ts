import { assertPassword } from '../account-rules.js';
import { HOW_TO_GET_A_DEVELOPER_TOKEN, requireManagement, requireUser } from '../authorization.js';
import type { UserPatch, UserTokenIssuer } from '../data-plane.js';
import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import type { LoginResult, Principal, Tenant, User } from '../model.js';
import type { DatabasePath, TenantPath } from '../paths.js';
import { accessDatabase, accessTenant, type DataPlaneDeps, type DatabaseAccess } from './database-access.js';
import { isMember, requireLiveSession, requireMembership, sessionEnded, tenantsOfSession } from './membership.js';
import { signInWithPassword, type PasswordAccount, type PasswordSignInDeps } from './password-sign-in.js';
import { firstPage, type Page, type PageRequest } from '../paging.js';
import { hashPassword, type HashClaim } from '../password-hashing.js';

export interface SignInDeps extends DataPlaneDeps, PasswordSignInDeps {
  tokens: UserTokenIssuer;
  sessionTtlSeconds: number;
  /**
   * Whether members of a tenant may create users in it (TENANT_MEMBERS_CREATE_USERS). Off by
   * default: an email is unique in the whole database, so a member's 409 `email_taken` would tell
   * them that someone in another tenant has an account.
   */
  membersCreateUsers?: boolean;
  /**
   * Whether members of a tenant may add another existing user of the database to it
   * (TENANT_MEMBERS_LINK_USERS). Off by default: a member could pull in any user whose id they
   * know, and so see them.
   */
  membersLinkUsers?: boolean;
}

/**
 * A tenant member creating a user, where members may not: refused before the email is read, so
 * the answer is the same whether the email has an account or not.
 */
function refuseMemberCreation(deps: SignInDeps): void {
  if (deps.membersCreateUsers) return;
  throw new ForbiddenError(
    'developer_token_required',
    'Only a developer can create users here: an email may already have an account in another tenant, which a member must not learn. ' +
      `A developer attaches an existing account with PUT .../users/{userId}/link. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`,
  );
}

export interface SignUpInput extends UserPatch {
  email: string;
  password: string;
}

function userNotFound(id: string): NotFoundError {
  return new NotFoundError('user_not_found', `User '${id}' not found`);
}

/** Opens a session for the user and issues its token: every way of signing in ends here. */
export async function startSession(deps: Pick<SignInDeps, 'tokens' | 'sessionTtlSeconds'>, access: DatabaseAccess, user: User): Promise<LoginResult> {
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

/**
 * Creates a user with a password as a member of the tenant and signs them in (SPEC POST T/users).
 * A developer may; a member of the tenant only where members create users (refuseMemberCreation).
 */
export async function signUp(deps: SignInDeps, caller: Principal, path: TenantPath, input: SignUpInput, clientAddress?: string): Promise<LoginResult> {
  const access = await accessTenant(deps, caller, path);
  if (caller.kind === 'user') refuseMemberCreation(deps);
  assertPassword(input.password);
  const passwordHash = await hashPassword(deps.hasher, newUserClaim(path, input.email, clientAddress), input.password);
  const user = await access.data.users.create({ ...input, passwordHash }, access.tenant.id);
  return startSession(deps, access, user);
}

type UserAccount = { user: User; access: DatabaseAccess };

/** A database's key in the hashing queue's shares: the same whichever route its users come by. */
export function databaseShareKey(path: DatabasePath): string {
  return `${path.workspaceSlug}/${path.databaseName}`;
}

/** The hashing queue's claim of a new user's password: their database, the email as typed, the caller's address. */
export function newUserClaim(path: DatabasePath, email: string | undefined, clientAddress: string | undefined): HashClaim {
  const database = databaseShareKey(path);
  return {
    database,
    ...(email !== undefined ? { account: `email:${database}:${email.trim().toLowerCase()}` } : {}),
    ...(clientAddress !== undefined ? { address: clientAddress } : {}),
  };
}

/** The user an email names in a database; a database that is gone or not ready has none. */
async function findUserAccount(deps: DataPlaneDeps, path: DatabasePath, email: string): Promise<PasswordAccount<UserAccount> | null> {
  const database = await deps.locator.findBySlugAndName(path.workspaceSlug, path.databaseName);
  if (!database || database.status !== 'READY') return null;
  const access = { database, data: deps.dataPlane.open(database) };
  try {
    const found = await access.data.users.findCredentials(email);
    return found && { account: { user: found.user, access }, throttleKey: `user:${database.id}:${found.user.id}`, passwordHash: found.passwordHash };
  } catch (error) {
    // Deleted a moment ago (a cached path still led here): a sign-in failure like any other.
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/**
 * Password sign-in to a database, or to one tenant of it. Every failure (no such database or
 * user, wrong password, not a member) costs one password verification and answers the same 401;
 * repeated failures wait (429) as sign-in-throttling.ts describes.
 */
export async function signIn(
  deps: SignInDeps,
  path: DatabasePath & { tenantId?: string },
  credentials: { email: string; password: string },
  clientAddress: string,
): Promise<LoginResult> {
  const email = credentials.email.trim();
  const { tenantId } = path;
  const { user, access } = await signInWithPassword(deps, {
    password: credentials.password,
    typedKey: `email:${path.workspaceSlug}/${path.databaseName}:${email.toLowerCase()}`,
    address: clientAddress,
    database: databaseShareKey(path),
    findAccount: () => findUserAccount(deps, path, email),
    admits: async (account) => tenantId === undefined || (await isMember(account.access.data.users, account.user.id, tenantId)),
  });
  return startSession(deps, access, user);
}

/** Ends the caller's session: its cookie and every token issued with it stop working. */
export async function signOut(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string): Promise<void> {
  const user = requireUser(caller);
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
  await access.data.sessions.revoke(user.sessionId);
}

/** A page of the tenant's members, oldest first. */
export async function listTenantUsers(deps: DataPlaneDeps, caller: Principal, path: TenantPath, page: PageRequest = firstPage()): Promise<Page<User>> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  // Developers and clients may see every tenant: their reads need no row-level security.
  return data.users.listMembersPage(tenant.id, page, caller.kind === 'user' ? 'tenant' : 'administration');
}

/** A user outside the tenant does not exist here, even when they exist in the database. */
export async function getTenantUser(deps: DataPlaneDeps, caller: Principal, path: TenantPath, userId: string): Promise<User> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  const user = (await isMember(data.users, userId, tenant.id)) ? await data.users.find(userId) : null;
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
  return visibleUser(await accessDatabase(deps, caller, { workspaceSlug, databaseName }), caller, userId);
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
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
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
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
  const tenants = await tenantsOfSession(access, user);
  const found = await access.data.users.find(user.userId);
  if (!found) throw sessionEnded();
  return { user: found, tenantIds: tenants.map((tenant) => tenant.id) };
}

/**
 * Adds an existing user of the database to the tenant. Developers only, unless the platform lets
 * members (membersLinkUsers): a member could pull any user they know the id of into their tenant.
 */
export async function linkUser(deps: DataPlaneDeps & { membersLinkUsers?: boolean }, caller: Principal, path: TenantPath, userId: string): Promise<User> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  if (!deps.membersLinkUsers) requireManagement(caller, 'Only a developer can add a user to a tenant');
  const user = await data.users.find(userId);
  if (!user) throw userNotFound(userId);
  await data.users.link(tenant.id, userId);
  return user;
}

/** Removes a user from the tenant: a developer may remove anyone, a member themselves (anyone, where members link users). */
export async function unlinkUser(deps: DataPlaneDeps & { membersLinkUsers?: boolean }, caller: Principal, path: TenantPath, userId: string): Promise<void> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  if (caller.kind === 'user' && caller.userId !== userId && !deps.membersLinkUsers) {
    throw new ForbiddenError('developer_token_required', `A member can only remove themselves from a tenant. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`);
  }
  if (!(await data.users.unlink(tenant.id, userId))) throw userNotFound(userId);
}

/** The tenants of a user: any user's for a developer, only their own for a user. */
export async function listUserTenants(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string, userId: string): Promise<Tenant[]> {
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
  await requireLiveSession(access, caller);
  if (caller.kind === 'user' && caller.userId !== userId) throw userNotFound(userId);
  if (!(await access.data.users.find(userId))) throw userNotFound(userId);
  const ids = new Set(await access.data.users.tenantIds(userId));
  return (await access.data.tenants.list()).filter((tenant) => ids.has(tenant.id));
}

/**
 * The cookie-authenticated v2 create (SPEC POST /v2/databases/{database}/tenants/{tenantId}/users):
 * a signed-in member of the tenant creates a user in it, where members create users
 * (refuseMemberCreation). The caller stays signed in as themselves.
 */
export async function createUserWithSession(
  deps: SignInDeps,
  sessionToken: string | undefined,
  path: { databaseId: string; tenantId: string },
  input: SignUpInput,
  clientAddress?: string,
): Promise<User> {
  const database = await deps.locator.findById(path.databaseId);
  if (!sessionToken || !database || database.status !== 'READY') throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
  const data = deps.dataPlane.open(database);
  const session = await data.sessions.findByToken(sessionToken);
  if (!session) throw new UnauthenticatedError('invalid_session', 'The session is not valid');
  await requireMembership({ data }, { userId: session.userId, sessionId: session.id }, path.tenantId);
  refuseMemberCreation(deps);
  assertPassword(input.password);
  const claim = newUserClaim({ workspaceSlug: database.workspace.slug, databaseName: database.name }, input.email, clientAddress);
  const passwordHash = await hashPassword(deps.hasher, claim, input.password);
  return data.users.create({ ...input, passwordHash }, path.tenantId);
}
