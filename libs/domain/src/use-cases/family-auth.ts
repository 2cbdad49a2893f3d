import { assertPassword, cleanTenantName } from '../account-rules.js';
import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import type { Database, LoginResult, Tenant, User, UserPrincipal } from '../model.js';
import type { DatabasePath } from '../paths.js';
import type { SsoRegistration, SsoRegistrationRepository } from '../sso/sso-ports.js';
import type { DatabaseAccess } from './database-access.js';
import { databaseAuthSettings, type AuthSettingsDeps } from './auth-settings.js';
import { requireLiveSession } from './membership.js';
import { hashPassword } from '../password-hashing.js';
import { newUserClaim, signIn, startSession, type SignInDeps } from './users.js';

/*
 * The API family's auth API (`{api_url}/v2/databases/{databaseId}/...`), as their server SDK
 * speaks it: the same users, tenants, memberships and sessions as the SPEC's routes, reached with
 * the session cookie instead of a bearer token. A signed-in cookie becomes the same user
 * principal a user token carries, so every rule of the SPEC's routes holds here unchanged.
 */

/** What the family surface may do beyond the SPEC routes' rules (README, "Apps built on the family's SDK"). */
export interface FamilyAuthDeps extends SignInDeps, AuthSettingsDeps {}

/** A session cookie that holds, with what it opens. */
export interface FamilySession {
  database: Database;
  path: DatabasePath;
  caller: UserPrincipal;
  user: User;
  expires: Date;
}

export function databaseNotFound(id: string): NotFoundError {
  return new NotFoundError('database_not_found', `Database '${id}' not found`);
}

function noSession(): UnauthenticatedError {
  return new UnauthenticatedError('invalid_session', 'A valid session cookie is required');
}

/** The path the SPEC's use cases take for a database the family surface names by id. */
function pathOf(database: Database): DatabasePath {
  return { workspaceSlug: database.workspace.slug, databaseName: database.name };
}

/** A ready database by id; a deleted, unknown or unready one is not found. */
export async function familyDatabase(deps: SignInDeps, databaseId: string): Promise<DatabaseAccess & { path: DatabasePath }> {
  const database = await deps.locator.findById(databaseId);
  if (!database || database.status !== 'READY') throw databaseNotFound(databaseId);
  return { database, data: deps.dataPlane.open(database), path: pathOf(database) };
}

/**
 * The session a cookie names in this database, or null. Sessions live in each database's own
 * tables, so a cookie from another database finds nothing here.
 */
export async function findFamilySession(deps: SignInDeps, databaseId: string, token: string | undefined): Promise<FamilySession | null> {
  if (!token) return null;
  const { database, data, path } = await familyDatabase(deps, databaseId);
  const session = await data.sessions.findByToken(token);
  if (!session) return null;
  const user = await data.users.find(session.userId);
  if (!user) return null;
  return { database, path, user, expires: session.expires, caller: { kind: 'user', userId: user.id, databaseId: database.id, sessionId: session.id } };
}

/** Like findFamilySession, but a missing or ended session is 401 invalid_session. */
export async function requireFamilySession(deps: SignInDeps, databaseId: string, token: string | undefined): Promise<FamilySession> {
  const session = await findFamilySession(deps, databaseId, token);
  if (!session) throw noSession();
  return session;
}

/** Password sign-in to the database by id: the SPEC's sign-in, with its throttling and its one 401. */
export async function familySignIn(deps: SignInDeps, databaseId: string, credentials: { email: string; password: string }, clientAddress: string): Promise<LoginResult> {
  const { path } = await familyDatabase(deps, databaseId);
  return signIn(deps, path, credentials, clientAddress);
}

export interface FamilySignUpInput {
  email: string;
  password: string;
  name?: string;
  givenName?: string;
  familyName?: string;
  picture?: string;
  /** A tenant to create with the new user as its first member (`newTenantName`). */
  newTenantName?: string;
  /** Joining an existing tenant by id (`tenantId`): refused, an id proves no right to join. */
  tenantId?: string;
}

/** Whether a sign-up signs the new user in, and the client's address (its share of the hashing queue). */
export interface SignUpOptions {
  signIn: boolean;
  clientAddress?: string;
}

/**
 * Public self sign-up (POST /signup): only where the database's auth settings allow it (their
 * `selfSignUp`, SELF_SIGN_UP by default). The new user belongs to
 * no tenant, or to the one `newTenantName` creates for them; joining an existing tenant takes a
 * member who may add users (POST /users, PUT .../link), never an id alone.
 */
export async function familySignUp(
  deps: FamilyAuthDeps,
  databaseId: string,
  input: FamilySignUpInput,
  options: SignUpOptions = { signIn: true },
): Promise<{ user: User; tenantIds: string[]; result: LoginResult | null }> {
  return createSignedUpUser(deps, await allowedSignUp(deps, databaseId, input), input, options);
}

/**
 * Whether this sign-up may go ahead, before anything is counted or written: the database is live,
 * its sign-up is open, no existing tenant is named, and the password and tenant name are valid.
 */
export async function allowedSignUp(deps: FamilyAuthDeps, databaseId: string, input: FamilySignUpInput): Promise<DatabaseAccess> {
  const access = await familyDatabase(deps, databaseId);
  if (!(await databaseAuthSettings(deps, databaseId)).selfSignUp) {
    throw new ForbiddenError('sign_up_disabled', 'Self sign-up is not enabled for this database (its auth settings’ selfSignUp); a developer creates users with POST T/users');
  }
  if (input.tenantId !== undefined) {
    throw new ForbiddenError('tenant_join_refused', 'Signing up into an existing tenant is refused: a member adds users to a tenant (POST /users or PUT /tenants/{t}/users/{u}/link)');
  }
  if (input.newTenantName !== undefined) cleanTenantName(input.newTenantName);
  assertPassword(input.password);
  return access;
}

/** The user (and the new tenant it names) of a sign-up allowedSignUp let through, signed in when asked. */
export async function createSignedUpUser(
  deps: FamilyAuthDeps,
  access: DatabaseAccess,
  input: FamilySignUpInput,
  options: SignUpOptions,
): Promise<{ user: User; tenantIds: string[]; result: LoginResult | null }> {
  const tenantName = input.newTenantName === undefined ? undefined : cleanTenantName(input.newTenantName);
  const claim = newUserClaim({ workspaceSlug: access.database.workspace.slug, databaseName: access.database.name }, input.email, options.clientAddress);
  const passwordHash = await hashPassword(deps.hasher, claim, input.password);
  const { email, name, givenName, familyName, picture } = input;
  const user = await access.data.users.create({ email, name, givenName, familyName, picture, passwordHash });
  let tenant: Tenant | null = null;
  if (tenantName !== undefined) {
    tenant = await access.data.tenants.create({ name: tenantName });
    await access.data.users.link(tenant.id, user.id);
  }
  const tenantIds = tenant ? [tenant.id] : [];
  return { user, tenantIds, result: options.signIn ? await startSession(deps, access, user) : null };
}

/** Deletes the signed-in user (DELETE /me): their memberships go and every session of theirs ends. */
export async function deleteSelf(deps: SignInDeps, session: FamilySession): Promise<void> {
  const access = { database: session.database, data: deps.dataPlane.open(session.database) };
  await requireLiveSession(access, session.caller);
  if (!(await access.data.users.delete(session.caller.userId))) throw noSession();
}

/**
 * A tenant's enabled OIDC providers, for GET /auth/providers: none for a tenant that is not live.
 * Only names and login addresses are shown, to anyone: what the SPEC's public locations list shows.
 */
export async function enabledTenantProviders(
  deps: SignInDeps & { ssoRegistrations: SsoRegistrationRepository },
  databaseId: string,
  tenantId: string,
): Promise<SsoRegistration[]> {
  const { database, data } = await familyDatabase(deps, databaseId);
  if (!(await data.tenants.find(tenantId))) return [];
  return (await deps.ssoRegistrations.listForTenant(database.id, tenantId)).filter((registration) => registration.enabled);
}
