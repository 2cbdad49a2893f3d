import { createHash, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../errors.js';
import type { Database } from '../model.js';
import type { TenantPath } from '../paths.js';
import type { SecretSealer } from '../ports.js';
import { databaseNotFound } from '../use-cases/family-auth.js';
import { beginSsoLogin, completeSsoLogin, SSO_LOGIN_TTL_SECONDS, type SsoCallback, type SsoSignedIn, type SsoSignInDeps } from './sso-sign-in.js';
import type { SpentSsoStateStore } from './sso-ports.js';

/*
 * Single sign-on through the API family's surface (`/v2/databases/{id}/auth/signin|callback/{provider}`).
 * Every request reaches us from the app's server (the SDK forwards the browser's), so the client
 * address names the app, not the visitor: a per-address cap on stored sign-ins would let one
 * anonymous visitor lock every user of every app behind that address out. So nothing is stored
 * at the start: the state, nonce, PKCE verifier, provider, tenant, database and app origin travel
 * in the `nile.sso-state` cookie, sealed (AES-256-GCM, keys derived from the platform's
 * signing-key ring, bound to the database) and short-lived; the callback opens it, checks it
 * against the request, and spends the state (kept, hashed, until the cookie would have expired),
 * so each sign-in finishes once.
 */

export interface FamilySsoDeps extends SsoSignInDeps {
  /** Seals the `nile.sso-state` cookie: SIGNING_KEY_SECRET_KEYS, derived for FAMILY_SSO_STATE_PURPOSE. */
  ssoStateSealer: SecretSealer;
  spentSsoStates: SpentSsoStateStore;
}

/** What the sealer's keys are derived for: no other use of the ring opens these cookies. */
export const FAMILY_SSO_STATE_PURPOSE = 'nile.sso-state cookie';

/** The sealed cookie is bound to its database: one sealed for another does not open. */
export const familySsoStateContext = (databaseId: string) => `nile.sso-state:${databaseId}`;

/** What the `nile.sso-state` cookie holds, sealed. */
interface SealedSsoState {
  state: string;
  nonce: string;
  codeVerifier: string;
  registrationId: string;
  provider: string;
  tenantId: string;
  databaseId: string;
  appOrigin: string;
  /** Milliseconds since the epoch. */
  expires: number;
}

const STRING_FIELDS = ['state', 'nonce', 'codeVerifier', 'registrationId', 'provider', 'tenantId', 'databaseId', 'appOrigin'] as const;

async function readyDatabase(deps: SsoSignInDeps, databaseId: string): Promise<Database> {
  const database = await deps.locator.findById(databaseId);
  if (!database || database.status !== 'READY') throw databaseNotFound(databaseId);
  return database;
}

function tenantPath(database: Database, tenantId: string): TenantPath {
  return { workspaceSlug: database.workspace.slug, databaseName: database.name, tenantId };
}

export interface FamilySsoStart {
  /** The provider's authorization URL, with state, nonce and the PKCE challenge. */
  location: string;
  /** The `nile.sso-state` cookie's value. */
  cookie: string;
  maxAgeSeconds: number;
}

/**
 * Starts a sign-in with the tenant's provider. `callbackUrl` is the app's redirect URI the provider
 * must accept, made from `appOrigin` and the provider's name; nothing is kept server-side.
 */
export async function startFamilySsoLogin(
  deps: FamilySsoDeps,
  databaseId: string,
  tenantId: string,
  provider: string,
  input: { appOrigin: string; callbackUrl: string },
): Promise<FamilySsoStart> {
  const database = await readyDatabase(deps, databaseId);
  const begun = await beginSsoLogin(deps, tenantPath(database, tenantId), provider, { callbackUrl: input.callbackUrl });
  const sealed: SealedSsoState = {
    state: begun.state,
    nonce: begun.login.nonce,
    codeVerifier: begun.login.codeVerifier,
    registrationId: begun.login.registrationId,
    provider: begun.provider,
    tenantId,
    databaseId: database.id,
    appOrigin: input.appOrigin,
    expires: Date.now() + SSO_LOGIN_TTL_SECONDS * 1000,
  };
  const cookie = deps.ssoStateSealer.seal(JSON.stringify(sealed), familySsoStateContext(database.id));
  return { location: begun.location, cookie, maxAgeSeconds: SSO_LOGIN_TTL_SECONDS };
}

/** The cookie's content, when it opens for this database and holds what a start seals; else null. */
function openState(deps: FamilySsoDeps, databaseId: string, cookie: string): SealedSsoState | null {
  let value: unknown;
  try {
    value = JSON.parse(deps.ssoStateSealer.open(cookie, familySsoStateContext(databaseId)));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const fields = value as Record<string, unknown>;
  if (!STRING_FIELDS.every((name) => typeof fields[name] === 'string') || typeof fields.expires !== 'number') return null;
  return value as SealedSsoState;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

function mismatch(message: string): ValidationError {
  return new ValidationError('session_state_mismatch', message);
}

/**
 * Finishes a sign-in the family surface started. 400 session_state_missing without the callback's
 * state or the browser's cookie; 400 session_state_mismatch for a cookie that does not open here
 * (altered, sealed for another database, or with keys no longer in the ring), has expired, holds
 * another state (another browser's sign-in), another provider or another app, or whose state was
 * spent already. Checked before anything else: a refusal signs no one in and changes nothing.
 */
export async function finishFamilySsoLogin(
  deps: FamilySsoDeps,
  databaseId: string,
  callback: SsoCallback,
  expected: { provider: string; appOrigin: string; callbackUrl: string },
): Promise<SsoSignedIn> {
  if (!callback.state) throw new ValidationError('session_state_missing', 'The callback has no state: start the sign-in again');
  if (!callback.browserToken) {
    throw new ValidationError('session_state_missing', 'This browser holds no sign-in in progress (its nile.sso-state cookie is missing): start the sign-in again here');
  }
  const sealed = openState(deps, databaseId, callback.browserToken);
  if (!sealed || sealed.databaseId !== databaseId || sealed.expires <= Date.now()) {
    throw mismatch('This sign-in is unknown, expired or was started for another database: start it again');
  }
  if (!timingSafeEqual(digest(sealed.state), digest(callback.state))) throw mismatch('This sign-in was started elsewhere: start it again');
  if (sealed.provider !== expected.provider) throw mismatch('This sign-in was started with another provider: start it again');
  if (sealed.appOrigin !== expected.appOrigin) throw mismatch('This sign-in was started from another app: start it again');
  if (!(await deps.spentSsoStates.spend(sealed.state, new Date(sealed.expires)))) throw mismatch('This sign-in has finished already: start it again');
  const database = await readyDatabase(deps, databaseId);
  const login = {
    registrationId: sealed.registrationId,
    databaseId: sealed.databaseId,
    tenantId: sealed.tenantId,
    nonce: sealed.nonce,
    codeVerifier: sealed.codeVerifier,
    // Made from the same origin and provider as at the start: the redirect URI the provider was given.
    callbackUrl: expected.callbackUrl,
    link: null,
  };
  return completeSsoLogin(deps, tenantPath(database, sealed.tenantId), login, callback);
}
