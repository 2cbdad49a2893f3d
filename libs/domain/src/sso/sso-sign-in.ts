import { randomBytes } from 'node:crypto';
import type { UserTokenIssuer } from '../data-plane.js';
import { addressKey } from '../client-address-key.js';
import { ConflictError, ForbiddenError, NotFoundError, RateLimitedError, UnauthenticatedError, ValidationError } from '../errors.js';
import type { LoginResult, User } from '../model.js';
import type { DatabasePath, TenantPath } from '../paths.js';
import type { DatabaseAccess } from '../use-cases/database-access.js';
import { isMember, tenantNotFound } from '../use-cases/membership.js';
import { startSession } from '../use-cases/users.js';
import { emailDomainOf, filteredRegistrations, openClientSecret, unknownProvider, type SsoDeps, type SsoFilter } from './registrations.js';
import type { OidcIdentity, PendingSsoLogin, SsoLoginStateStore, SsoRegistration } from './sso-ports.js';

export interface SsoSignInDeps extends SsoDeps {
  loginStates: SsoLoginStateStore;
  tokens: UserTokenIssuer;
  sessionTtlSeconds: number;
}

/** How long a sign-in may stay at the provider before its state is forgotten. */
export const SSO_LOGIN_TTL_SECONDS = 600;
/** Sign-ins one address (an IPv6 /64) may have under way at once: anonymous requests must not fill the store. */
export const SSO_MAX_PENDING_PER_ADDRESS = 100;

/** A database and tenant as an anonymous caller reaches them: both must exist, the database READY. */
async function publicTenant(deps: SsoDeps, path: TenantPath): Promise<DatabaseAccess> {
  const database = await deps.locator.findBySlugAndName(path.workspaceSlug, path.databaseName);
  if (!database || database.status !== 'READY') throw tenantNotFound(path.tenantId);
  const access = { database, data: deps.dataPlane.open(database) };
  if (!(await access.data.tenants.find(path.tenantId))) throw tenantNotFound(path.tenantId);
  return access;
}

function providerDisabled(name: string): NotFoundError {
  return new NotFoundError('provider_disabled', `SSO provider '${name}' is disabled for this tenant`);
}

function usableRegistration(registration: SsoRegistration | null, name: string): SsoRegistration {
  if (!registration) throw unknownProvider(name);
  if (!registration.enabled) throw providerDisabled(name);
  return registration;
}

export interface SsoLoginStart {
  /** The provider's authorization URL, with state, nonce and the PKCE challenge. */
  location: string;
  /** Goes into the browser's cookie: only the browser that started the sign-in can finish it. */
  browserToken: string;
  maxAgeSeconds: number;
}

/** A sign-in sent to the provider: its URL, its state, and what finishing it needs. */
export interface BegunSsoLogin {
  location: string;
  state: string;
  login: PendingSsoLogin;
  /** The registration's name in the tenant. */
  provider: string;
}

/**
 * Checks the tenant and its provider and prepares the provider's authorization request (state,
 * nonce, PKCE); keeps nothing. With `linkSessionToken` (a signed-in user linking the provider to
 * their account), the session must be live and the provider is asked to sign the user in again.
 */
export async function beginSsoLogin(
  deps: SsoSignInDeps,
  path: TenantPath,
  provider: string,
  input: { callbackUrl: string; linkSessionToken?: string },
): Promise<BegunSsoLogin> {
  const { database, data } = await publicTenant(deps, path);
  const registration = usableRegistration(await deps.ssoRegistrations.find(database.id, path.tenantId, provider), provider);
  let link: PendingSsoLogin['link'] = null;
  if (input.linkSessionToken !== undefined) {
    const session = await data.sessions.findByToken(input.linkSessionToken);
    if (!session) throw new UnauthenticatedError('invalid_session', 'Linking a provider to your account needs you signed in (the session cookie) in this browser');
    link = { userId: session.userId, sessionId: session.id };
  }
  const start = await deps.relyingParty.begin({
    metadata: registration.metadata,
    clientId: registration.clientId,
    callbackUrl: input.callbackUrl,
    reauthenticate: link !== null,
  });
  const login: PendingSsoLogin = {
    registrationId: registration.id,
    databaseId: database.id,
    tenantId: path.tenantId,
    nonce: start.nonce,
    codeVerifier: start.codeVerifier,
    callbackUrl: input.callbackUrl,
    link,
  };
  return { location: start.url, state: start.state, login, provider: registration.provider };
}

/**
 * Starts a sign-in with the tenant's provider (SPEC GET T/auth/oidc/providers/{name}/login),
 * kept server-side under its state (the route takes `linkSessionToken` only from a same-site
 * POST). An address with SSO_MAX_PENDING_PER_ADDRESS sign-ins under way waits (429) until the
 * oldest of them expires.
 */
export async function startSsoLogin(
  deps: SsoSignInDeps,
  path: TenantPath,
  provider: string,
  input: { callbackUrl: string; clientAddress: string; linkSessionToken?: string },
): Promise<SsoLoginStart> {
  const begun = await beginSsoLogin(deps, path, provider, input);
  const browserToken = randomBytes(32).toString('base64url');
  const expires = new Date(Date.now() + SSO_LOGIN_TTL_SECONDS * 1000);
  const limit = { address: addressKey(input.clientAddress), maxPerAddress: SSO_MAX_PENDING_PER_ADDRESS };
  const saved = await deps.loginStates.save(begun.state, browserToken, begun.login, expires, limit);
  if (!saved.saved) {
    throw new RateLimitedError(saved.retryAfterSeconds, `Too many sign-ins under way from this address; try again in ${saved.retryAfterSeconds} s`);
  }
  return { location: begun.location, browserToken, maxAgeSeconds: SSO_LOGIN_TTL_SECONDS };
}

export interface SsoCallback {
  /** The callback's query as the provider sent it (code, state, iss, or error). */
  query: URLSearchParams;
  state: string | undefined;
  code: string | undefined;
  /** The provider's `error`, when it sent one instead of a code. */
  error: string | undefined;
  /** From the browser's cookie. */
  browserToken: string | undefined;
}

export interface SsoSignedIn {
  registration: SsoRegistration;
  tenantId: string;
  result: LoginResult;
}

/** Takes the pending sign-in the state names, once: whatever goes wrong after, it cannot be replayed. */
async function takeLogin(deps: SsoSignInDeps, tenantId: string, callback: SsoCallback): Promise<PendingSsoLogin> {
  if (!callback.state) throw new ValidationError('session_state_missing', 'The callback has no state: start the sign-in again');
  const taken = await deps.loginStates.take(callback.state, callback.browserToken);
  if (!taken) throw new ValidationError('session_state_mismatch', 'This sign-in is unknown, already finished or expired: start it again');
  if (!callback.browserToken) {
    throw new ValidationError('session_state_missing', 'This browser holds no sign-in in progress (its cookie is missing): start the sign-in again here');
  }
  if (!taken.sameBrowser || taken.login.tenantId !== tenantId) {
    throw new ValidationError('session_state_mismatch', 'This sign-in was started elsewhere: start it again');
  }
  return taken.login;
}

/** The callback URL the provider was given, with the query it came back with: the token request repeats the former. */
function responseUrlOf(login: PendingSsoLogin, callback: SsoCallback): URL {
  const url = new URL(login.callbackUrl);
  url.search = callback.query.toString();
  return url;
}

/** The provider's account may sign in to this registration: a verified email in its domains. */
function admittedEmail(identity: OidcIdentity, registration: SsoRegistration): string {
  if (!identity.email || !identity.emailVerified) {
    throw new ForbiddenError('email_not_verified', 'The provider did not vouch for your email address (email_verified), so it cannot sign you in');
  }
  const domain = emailDomainOf(identity.email);
  if (domain === null || !registration.emailDomains.includes(domain)) {
    throw new ForbiddenError('email_domain_not_allowed', `Emails at ${domain ?? 'that address'} may not sign in to this tenant with this provider`);
  }
  return identity.email;
}

function notAMember(): ForbiddenError {
  return new ForbiddenError('not_a_member', 'You are not a member of this tenant: ask its administrator to add you');
}

function accountExists(): ConflictError {
  return new ConflictError(
    'account_exists',
    'An account with this email already exists. Sign in to it as before, then link this provider to it from there (POST .../providers/{providerName}/link).',
  );
}

/**
 * The user the provider's account is, found by (issuer, subject), never by email alone: an email
 * that has an account not linked to this identity is refused, unless the signed-in owner of an
 * account asked to link it (their session still live). Everything is decided before anything is
 * written, so a refusal leaves no link, membership or user behind. A new account is created, and
 * a member added, only where the registration provisions users.
 */
async function resolveUser(access: DatabaseAccess, registration: SsoRegistration, identity: OidcIdentity, email: string, login: PendingSsoLogin): Promise<User> {
  const { users, sessions } = access.data;
  const linked = await users.findByIdentity(identity);
  let user: User | null;
  if (login.link !== null) {
    if (!(await sessions.isLive(login.link.sessionId, login.link.userId))) {
      throw new UnauthenticatedError('invalid_session', 'The session that asked to link this provider has ended: sign in and link again');
    }
    if (linked && linked.id !== login.link.userId) throw new ConflictError('identity_taken', 'This account at the provider is linked to another user');
    user = linked ?? (await users.find(login.link.userId));
    if (!user) throw new UnauthenticatedError('invalid_session', 'The account to link no longer exists');
  } else {
    user = linked;
  }
  if (!user) {
    if (await users.findByEmail(email)) throw accountExists();
    if (!registration.jitProvisioning) throw notAMember();
    try {
      return await users.createWithIdentity(
        { email, emailVerified: new Date(), name: identity.name, givenName: identity.givenName, familyName: identity.familyName, picture: identity.picture },
        identity,
        login.tenantId,
      );
    } catch (error) {
      // The same email signed up a moment ago, some other way.
      if (error instanceof ConflictError && error.code === 'email_taken') throw accountExists();
      throw error;
    }
  }
  const member = await isMember(users, user.id, login.tenantId);
  if (!member && !registration.jitProvisioning) throw notAMember();
  if (!linked) await users.linkIdentity(user.id, identity);
  if (!member) await users.link(login.tenantId, user.id);
  return user;
}

/**
 * Finishes a sign-in (SPEC GET T/auth/oidc/callback): checks the state (once, this browser, this
 * tenant), exchanges the code and validates the ID token, admits the email, finds or provisions
 * the user, makes them a member where the registration provisions users, and opens a session.
 */
export async function finishSsoLogin(deps: SsoSignInDeps, path: TenantPath, callback: SsoCallback): Promise<SsoSignedIn> {
  return completeSsoLogin(deps, path, await takeLogin(deps, path.tenantId, callback), callback);
}

/** The rest of a callback once its login is taken and checked against the request. */
export async function completeSsoLogin(deps: SsoSignInDeps, path: TenantPath, login: PendingSsoLogin, callback: SsoCallback): Promise<SsoSignedIn> {
  if (callback.error !== undefined || !callback.code) {
    const said = callback.error === undefined ? 'no code' : `'${callback.error.slice(0, 100)}'`;
    throw new ValidationError('oidc_code_missing', `The provider answered ${said} instead of an authorization code: the sign-in did not happen`);
  }
  const access = await publicTenant(deps, path);
  if (access.database.id !== login.databaseId) throw new ValidationError('session_state_mismatch', 'This sign-in was started for another database');
  const registration = await deps.ssoRegistrations.findById(login.registrationId);
  if (registration && registration.tenantId !== login.tenantId) throw unknownProvider(registration.provider);
  const usable = usableRegistration(registration, registration?.provider ?? 'unknown');
  const identity = await deps.relyingParty.finish({
    metadata: usable.metadata,
    clientId: usable.clientId,
    clientSecret: openClientSecret(deps, usable),
    responseUrl: responseUrlOf(login, callback),
    state: callback.state!,
    nonce: login.nonce,
    codeVerifier: login.codeVerifier,
  });
  const email = admittedEmail(identity, usable);
  const user = await resolveUser(access, usable, identity, email, login);
  return { registration: usable, tenantId: login.tenantId, result: await startSession(deps, access, user) };
}

export interface SsoLocation {
  tenantId: string;
  provider: string;
  uri: string;
}

/**
 * The login URLs of the enabled providers of the database's tenants (SPEC GET
 * D/tenants/auth/oidc/locations), for a sign-in page that asks for an email first. Anyone may ask:
 * it shows what any login page shows. `loginUrl` builds a provider's login URL.
 */
export async function ssoLocations(
  deps: SsoDeps,
  path: DatabasePath,
  filter: SsoFilter,
  loginUrl: (tenantId: string, provider: string) => string,
): Promise<SsoLocation[]> {
  const database = await deps.locator.findBySlugAndName(path.workspaceSlug, path.databaseName);
  if (!database || database.status !== 'READY') return [];
  const tenants = new Set((await deps.dataPlane.open(database).tenants.list()).map((tenant) => tenant.id));
  return (await filteredRegistrations(deps, database.id, tenants, filter))
    .filter((registration) => registration.enabled)
    .map((registration) => ({ tenantId: registration.tenantId, provider: registration.provider, uri: loginUrl(registration.tenantId, registration.provider) }));
}
