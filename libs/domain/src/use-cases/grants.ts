import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { isClientId } from '../client-id.js';
import type { Developer, OAuthClient } from '../model.js';
import { OAuthError } from '../oauth-errors.js';
import { API_SCOPES, type AccessTokens, type ClientLookup, type GrantSettings, type GrantStore } from '../oauth-ports.js';
import type { DeveloperRepository, WorkspaceRepository } from '../ports.js';
import type { ClientSecrets } from './clients.js';

/**
 * The grants of the token service: authorization_code with PKCE (RFC 6749 section 4.1, RFC
 * 7636, RFC 9700), refresh_token with rotation, revocation (RFC 7009) and introspection (RFC
 * 7662). Codes and refresh tokens are random 256-bit strings kept only as SHA-256 digests.
 */
export interface GrantDeps {
  clients: ClientLookup;
  secrets: ClientSecrets;
  grants: GrantStore;
  developers: DeveloperRepository;
  workspaces: WorkspaceRepository;
  tokens: AccessTokens;
  settings: GrantSettings;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  scopes: string[];
  refreshToken?: string;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]+$/;
const DUMMY_DIGEST = '0'.repeat(43);

export function digestOf(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The scopes a request asks for: all of `allowed` when it names none (RFC 6749 section 3.3
 * lets the server choose a default), else exactly the ones named, which must all be allowed.
 */
export function parseScopes(requested: string | undefined, allowed: readonly string[] = API_SCOPES): string[] {
  if (requested === undefined || requested.trim() === '') return [...allowed];
  const names = [...new Set(requested.split(' ').filter(Boolean))];
  const unknown = names.filter((name) => !allowed.includes(name));
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `Scope '${unknown[0].slice(0, 100)}' is not available; ask for some of: ${allowed.join(' ')}`);
  return API_SCOPES.filter((name) => names.includes(name));
}

/**
 * Client authentication at the token, revocation and introspection endpoints. A confidential
 * client proves its secret (compared in constant time, also for unknown ids); a public client
 * names itself and sends no secret. Every failure reads `invalid_client`.
 */
export async function authenticateClient(
  deps: Pick<GrantDeps, 'clients' | 'secrets'>,
  credentials: { clientId: string | undefined; clientSecret: string | undefined },
): Promise<OAuthClient> {
  if (credentials.clientId === undefined || credentials.clientId === '') {
    throw new OAuthError('invalid_client', 'Client authentication is required');
  }
  const found = isClientId(credentials.clientId) ? await deps.clients.findForAuthentication(credentials.clientId) : null;
  const digest = found?.secretDigest ?? null;
  const matches = deps.secrets.matches(credentials.clientSecret ?? '', digest ?? DUMMY_DIGEST);
  if (!found) throw new OAuthError('invalid_client', 'Client authentication failed');
  if (found.client.type === 'public') {
    if (credentials.clientSecret !== undefined) throw new OAuthError('invalid_client', 'A public client has no secret');
    return found.client;
  }
  if (!digest || !matches) throw new OAuthError('invalid_client', 'Client authentication failed');
  return found.client;
}

/** The loopback http origins, without a port, to which RFC 8252's any-port rule applies. */
const LOOPBACK_HTTP_ORIGIN = String.raw`http://(?:127\.0\.0\.1|\[::1\]|localhost)`;
const PORTLESS_LOOPBACK = new RegExp(String.raw`^${LOOPBACK_HTTP_ORIGIN}(?=[/?]|$)`);
const LOOPBACK_WITH_PORT = new RegExp(String.raw`^(${LOOPBACK_HTTP_ORIGIN}):([1-9]\d{0,4})(/[^#]*)?$`);

/**
 * A redirect URI that the any-port rule of redirectUriMatches does not widen: a loopback http URI
 * without a port gets its default port (80) written out, so it matches itself only. For a web
 * page's redirect URI (the console's), which must never reach a process on another local port.
 */
export function exactRedirectUri(uri: string): string {
  return uri.replace(PORTLESS_LOOPBACK, (origin) => `${origin}:80`);
}

/**
 * Whether `presented` is one of the client's redirect URIs, compared as exact strings, except
 * that a loopback URI registered without a port matches it on any port (RFC 8252 section 7.3:
 * a command-line tool listens on whatever port it gets).
 */
export function redirectUriMatches(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const loopback = LOOPBACK_WITH_PORT.exec(presented);
  if (!loopback || Number(loopback[2]) > 65_535) return false;
  return registered.includes(`${loopback[1]}${loopback[3] ?? ''}`);
}

/** A checked authorization request (RFC 6749 section 4.1.1 with RFC 7636). */
export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  codeChallenge: string;
}

/**
 * The outcome of checking GET /oauth2/authorize's query. With no trustworthy redirect URI
 * (unknown client, unregistered URI) the error is shown on the page, never redirected
 * (RFC 6749 section 4.1.2.1); other errors go back to the client's redirect URI.
 */
export type AuthorizationCheck =
  | { ok: true; request: AuthorizationRequest }
  | { ok: false; shownHere: string }
  | { ok: false; redirectTo: string };

export async function checkAuthorizationRequest(
  deps: { clients: ClientLookup; settings: Pick<GrantSettings, 'issuer'> },
  query: Record<string, string | undefined>,
): Promise<AuthorizationCheck> {
  const clientId = query.client_id;
  if (!clientId) return { ok: false, shownHere: 'The request names no client (client_id is missing).' };
  const found = isClientId(clientId) ? await deps.clients.findForAuthentication(clientId) : null;
  if (!found) return { ok: false, shownHere: 'The application that sent you here is not registered.' };
  const redirectUri = query.redirect_uri;
  // RFC 9700 with PKCE: the redirect URI is always required, so it is always compared.
  if (!redirectUri) return { ok: false, shownHere: 'The request names no redirect_uri.' };
  if (!redirectUriMatches(found.client.redirectUris, redirectUri)) {
    return { ok: false, shownHere: 'The redirect_uri is not one the application registered.' };
  }
  const back = (error: string, description: string) => ({
    ok: false as const,
    redirectTo: authorizationResponseUrl(redirectUri, { error, error_description: description, state: query.state, iss: deps.settings.issuer }),
  });
  if (query.response_type !== 'code') return back('unsupported_response_type', "Only response_type 'code' is supported");
  if (!query.code_challenge) return back('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256');
  if (query.code_challenge_method !== 'S256') return back('invalid_request', "code_challenge_method must be 'S256' ('plain' is refused)");
  if (!/^[A-Za-z0-9\-_]{43}$/.test(query.code_challenge)) return back('invalid_request', 'code_challenge must be BASE64URL(SHA-256(code_verifier))');
  if (query.state !== undefined && query.state.length > 1024) return back('invalid_request', 'state is too long');
  let scopes: string[];
  try {
    scopes = parseScopes(query.scope);
  } catch (error) {
    if (error instanceof OAuthError) return back(error.error, error.message);
    throw error;
  }
  return { ok: true, request: { client: found.client, redirectUri, scopes, state: query.state, codeChallenge: query.code_challenge } };
}

/** The redirect URI with response parameters added to its query (RFC 6749 section 4.1.2). */
export function authorizationResponseUrl(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

/**
 * Issues a code for a signed-in developer. A workspace's client may only be authorized by a
 * member of that workspace (its tokens reach that workspace only); others get access_denied.
 */
export async function issueAuthorizationCode(
  deps: Pick<GrantDeps, 'grants' | 'workspaces' | 'settings'>,
  request: AuthorizationRequest,
  developer: Developer,
): Promise<string> {
  const workspaceId = request.client.workspaceId;
  if (workspaceId !== null && !(await isMember(deps.workspaces, workspaceId, developer.id))) {
    return authorizationResponseUrl(request.redirectUri, {
      error: 'access_denied',
      error_description: 'This application belongs to a workspace you are not a member of',
      state: request.state,
      iss: deps.settings.issuer,
    });
  }
  const code = newOpaqueToken();
  const now = deps.settings.clock.now();
  await deps.grants.saveCode(
    digestOf(code),
    {
      clientId: request.client.id,
      developerId: developer.id,
      workspaceId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      scopes: request.scopes,
      expires: new Date(now.getTime() + deps.settings.codeTtlSeconds * 1000),
    },
    now,
  );
  return authorizationResponseUrl(request.redirectUri, { code, state: request.state, iss: deps.settings.issuer });
}

async function isMember(workspaces: WorkspaceRepository, workspaceId: string, developerId: string): Promise<boolean> {
  const workspace = await workspaces.findById(workspaceId);
  return workspace !== null && (await workspaces.findBySlugForDeveloper(workspace.slug, developerId)) !== null;
}

async function issueForFamily(
  deps: GrantDeps,
  family: { id: string; clientId: string; developerId: string; workspaceId: string | null },
  scopes: string[],
): Promise<IssuedTokens> {
  const now = deps.settings.clock.now();
  const refreshToken = newOpaqueToken();
  await deps.grants.saveRefreshToken(digestOf(refreshToken), {
    familyId: family.id,
    scopes,
    now,
    expires: new Date(now.getTime() + deps.settings.refreshTtlSeconds * 1000),
  });
  const access = await deps.tokens.issueForDeveloper({
    developerId: family.developerId,
    clientId: family.clientId,
    scopes,
    workspaceId: family.workspaceId,
    familyId: family.id,
  });
  return { accessToken: access.token, expiresIn: access.expiresIn, scopes, refreshToken };
}

/**
 * grant_type=authorization_code. The code is spent by its first redemption, whatever follows:
 * a wrong verifier or redirect URI cannot be retried. A second redemption is a replay (the code
 * leaked): it revokes the family the first one started (RFC 9700 section 4.2.4).
 */
export async function exchangeAuthorizationCode(
  deps: GrantDeps,
  client: OAuthClient,
  input: { code?: string; redirectUri?: string; codeVerifier?: string },
): Promise<IssuedTokens> {
  if (!input.code) throw new OAuthError('invalid_request', "'code' is required");
  if (!input.redirectUri) throw new OAuthError('invalid_request', "'redirect_uri' is required");
  if (!input.codeVerifier) throw new OAuthError('invalid_request', "'code_verifier' is required (PKCE)");
  const now = deps.settings.clock.now();
  const redemption = await deps.grants.redeemCode(digestOf(input.code), client.id, randomUUID(), now);
  if (redemption.outcome === 'invalid') throw new OAuthError('invalid_grant', 'The code is invalid, expired or was issued to another client');
  if (redemption.outcome === 'replayed') {
    if (redemption.familyId) await deps.grants.revokeFamily(redemption.familyId);
    throw new OAuthError('invalid_grant', 'The code was already used; the tokens issued for it are revoked');
  }
  const { grant, familyId } = redemption;
  const verifierOk =
    input.codeVerifier.length >= 43 &&
    input.codeVerifier.length <= 128 &&
    UNRESERVED.test(input.codeVerifier) &&
    sameText(digestOf(input.codeVerifier), grant.codeChallenge);
  if (!verifierOk || input.redirectUri !== grant.redirectUri) {
    await deps.grants.revokeFamily(familyId);
    throw new OAuthError('invalid_grant', verifierOk ? 'redirect_uri differs from the authorization request' : 'code_verifier does not match the code_challenge');
  }
  return issueForFamily(deps, { id: familyId, clientId: client.id, developerId: grant.developerId, workspaceId: grant.workspaceId }, grant.scopes);
}

/**
 * grant_type=refresh_token, with rotation: every use returns a new refresh token and spends the
 * old one. Using a spent token again means two parties hold it, so the whole family is revoked;
 * two concurrent uses of one token are the same thing (exactly one wins, then the family ends).
 * Scope can only narrow, and stays narrowed for the tokens that follow.
 */
export async function refreshTokens(
  deps: GrantDeps,
  client: OAuthClient,
  input: { refreshToken?: string; scope?: string },
): Promise<IssuedTokens> {
  if (!input.refreshToken) throw new OAuthError('invalid_request', "'refresh_token' is required");
  const now = deps.settings.clock.now();
  const digest = digestOf(input.refreshToken);
  const record = await deps.grants.findRefreshToken(digest);
  const invalid = () => new OAuthError('invalid_grant', 'The refresh token is invalid, expired or revoked');
  if (!record || record.family.clientId !== client.id) throw invalid();
  const { family } = record;
  if (family.revoked || record.expires <= now) throw invalid();
  if (record.used) {
    await deps.grants.revokeFamily(family.id);
    throw new OAuthError('invalid_grant', 'The refresh token was already used; every token of its family is revoked');
  }
  const scopes = input.scope === undefined ? record.scopes : parseScopes(input.scope, record.scopes);
  const stillAllowed =
    (await deps.developers.findById(family.developerId)) !== null &&
    (family.workspaceId === null || (await isMember(deps.workspaces, family.workspaceId, family.developerId)));
  if (!stillAllowed) {
    await deps.grants.revokeFamily(family.id);
    throw invalid();
  }
  if (!(await deps.grants.useRefreshToken(digest, now))) {
    await deps.grants.revokeFamily(family.id);
    throw new OAuthError('invalid_grant', 'The refresh token was already used; every token of its family is revoked');
  }
  return issueForFamily(deps, family, scopes);
}

/** grant_type=client_credentials: a confidential workspace client's own token. */
export async function clientCredentialsTokens(deps: Pick<GrantDeps, 'tokens'>, client: OAuthClient, scope: string | undefined): Promise<IssuedTokens> {
  if (client.type !== 'confidential' || client.workspaceId === null) {
    throw new OAuthError('unauthorized_client', 'Only a confidential client of a workspace can use the client_credentials grant');
  }
  const scopes = parseScopes(scope);
  const access = await deps.tokens.issueForClient({ clientId: client.id, workspaceId: client.workspaceId, scopes });
  return { accessToken: access.token, expiresIn: access.expiresIn, scopes };
}

/**
 * RFC 7009. A refresh token, or an access token from a family, revokes its whole family. A
 * token of another client, an unknown one, or a client_credentials access token (it carries no
 * family; deleting its client ends it) changes nothing, and the answer is the same 200 either way.
 */
export async function revokeToken(
  deps: Pick<GrantDeps, 'grants' | 'tokens'>,
  client: OAuthClient,
  token: string,
  hint: string | undefined,
): Promise<void> {
  const asRefresh = async () => {
    const record = await deps.grants.findRefreshToken(digestOf(token));
    if (!record) return false;
    if (record.family.clientId === client.id) await deps.grants.revokeFamily(record.family.id);
    return true;
  };
  const asAccess = async () => {
    const claims = await deps.tokens.read(token);
    if (!claims) return false;
    if (claims.clientId === client.id && claims.familyId) await deps.grants.revokeFamily(claims.familyId);
    return true;
  };
  if (hint === 'access_token') {
    if (!(await asAccess())) await asRefresh();
  } else if (!(await asRefresh())) {
    await asAccess();
  }
}

/** RFC 7662 section 2.2. Inactive answers carry nothing but `active: false`. */
export type Introspection = { active: false } | ({ active: true } & Record<string, string | number | boolean | string[]>);

/**
 * RFC 7662. Only confidential clients may ask (the endpoint must not be an oracle for anyone),
 * and only about tokens issued to themselves; anything else is inactive.
 */
export async function introspectToken(
  deps: Pick<GrantDeps, 'grants' | 'tokens' | 'settings'>,
  client: OAuthClient,
  token: string,
): Promise<Introspection> {
  if (client.type !== 'confidential') throw new OAuthError('invalid_client', 'Only confidential clients may introspect tokens');
  const now = deps.settings.clock.now();
  const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
  const record = await deps.grants.findRefreshToken(digestOf(token));
  if (record) {
    const active = record.family.clientId === client.id && !record.used && !record.family.revoked && record.expires > now;
    if (!active) return { active: false };
    return {
      active: true,
      token_type: 'refresh_token',
      scope: record.scopes.join(' '),
      client_id: client.id,
      sub: record.family.developerId,
      iss: deps.settings.issuer,
      iat: seconds(record.created),
      exp: seconds(record.expires),
    };
  }
  const claims = await deps.tokens.read(token);
  if (!claims || claims.clientId !== client.id) return { active: false };
  if (claims.familyId) {
    const family = await deps.grants.findFamily(claims.familyId);
    if (!family || family.revoked) return { active: false };
  }
  return {
    active: true,
    token_type: 'Bearer',
    scope: claims.scopes.join(' '),
    client_id: claims.clientId,
    sub: claims.subject,
    aud: claims.audience,
    iss: deps.settings.issuer,
    iat: seconds(claims.issuedAt),
    exp: seconds(claims.expires),
  };
}
