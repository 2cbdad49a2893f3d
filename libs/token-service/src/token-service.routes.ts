import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  ConflictError,
  OAuthError,
  RateLimitedError,
  UnauthenticatedError,
  ValidationError,
  type AuthorizationCheck,
  type AuthorizationRequest,
  type Introspection,
  type IssuedTokens,
  type OAuthClient,
} from '@platform/domain';
import { defineRoute, respond, type RouteResult, arrayOf, bool, int, oneOf, optional, record, text, healthRoutes, type HealthScope } from '@platform/http';
import { AUTHORIZATION_PARAMS, errorPage, messagePage, signInPage, signUpPage } from './pages.js';

export interface TokenServiceScope extends HealthScope {
  issuer: string;
  /** The public half of the platform's signing keys. */
  jwks(): Promise<{ keys: object[] }>;
  /** Client authentication; throws OAuthError('invalid_client'). */
  authenticateClient(credentials: { clientId: string | undefined; clientSecret: string | undefined }): Promise<OAuthClient>;
  clientCredentials(client: OAuthClient, scope: string | undefined): Promise<IssuedTokens>;
  authorizationCode(client: OAuthClient, input: { code?: string; redirectUri?: string; codeVerifier?: string }): Promise<IssuedTokens>;
  refresh(client: OAuthClient, input: { refreshToken?: string; scope?: string }): Promise<IssuedTokens>;
  revoke(client: OAuthClient, token: string, hint: string | undefined): Promise<void>;
  introspect(client: OAuthClient, token: string): Promise<Introspection>;
  checkAuthorization(params: Record<string, string | undefined>): Promise<AuthorizationCheck>;
  /** Signs the developer in (UnauthenticatedError, RateLimitedError) and answers where to redirect. */
  signInAndAuthorize(request: AuthorizationRequest, credentials: { email: string; password: string }, clientAddress: string): Promise<string>;
  /** ValidationError for bad input, ConflictError for a taken email, RateLimitedError for too many from one address. */
  signUp(input: { email: string; password: string; name?: string }, clientAddress: string): Promise<void>;
}

const JwkSchema = record({
  kty: oneOf(['EC']),
  crv: oneOf(['P-256']),
  x: text({ max: 100 }),
  y: text({ max: 100 }),
  kid: text({ max: 100 }),
  alg: oneOf(['ES256']),
  use: oneOf(['sig']),
});

const TokenResponse = record(
  {
    access_token: text({ max: 4096, description: 'An ES256 JWT (typ at+jwt, RFC 9068)' }),
    token_type: oneOf(['Bearer']),
    expires_in: int('Seconds'),
    scope: text({ max: 1000, description: 'Space-separated: api:read, api:write' }),
    refresh_token: optional(text({ max: 100, description: 'authorization_code and refresh_token grants only; single use (rotated)' })),
  },
  'RFC 6749 section 5.1',
);

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
/** Under https the cookie is `__Host-` prefixed and Secure, so no plain-http response can plant one. */
function csrfCookieName(secure: boolean): string {
  return secure ? '__Host-oauth_csrf' : 'oauth_csrf';
}

/** RFC 6749 section 5.2: `{error, error_description}`, 400, or 401 for invalid_client. */
function oauthFailure(error: OAuthError, basicUsed: boolean) {
  const status = error.error === 'invalid_client' ? 401 : 400;
  return respond({
    status,
    body: { error: error.error, error_description: error.message },
    headers: { ...NO_STORE, ...(status === 401 && basicUsed ? { 'WWW-Authenticate': 'Basic realm="token"' } : {}) },
  });
}

/** The fields of a token request; a repeated field is a malformed request (RFC 6749 section 3.2). */
function single(form: Record<string, unknown>, name: string): string | undefined {
  const value = form[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `'${name}' must appear once`);
  if (value.length > 4096) throw new OAuthError('invalid_request', `'${name}' is too long`);
  return value;
}

/** Client credentials from HTTP Basic (RFC 6749 section 2.3.1) or the form, never both. */
function clientCredentials(authorization: string, form: Record<string, unknown>) {
  const formId = single(form, 'client_id');
  const formSecret = single(form, 'client_secret');
  if (!/^basic /i.test(authorization)) return { clientId: formId, clientSecret: formSecret, basic: false };
  if (formSecret !== undefined) throw new OAuthError('invalid_request', 'Use one client authentication method, not two');
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  let clientId: string;
  let clientSecret: string;
  try {
    clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
    clientSecret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
  } catch {
    throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  }
  if (formId !== undefined && formId !== clientId) throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
  return { clientId, clientSecret, basic: true };
}

/**
 * Runs a form-encoded OAuth endpoint: parses the form, authenticates the client, and maps
 * OAuthError to RFC 6749's error body. `basic` tracks whether a 401 should challenge Basic.
 */
async function oauthEndpoint(
  input: { body: Record<string, unknown> | undefined; header(name: string): string; scope: TokenServiceScope },
  work: (form: Record<string, unknown>, client: OAuthClient) => Promise<RouteResult & { __result: true }>,
) {
  let basicUsed = /^basic /i.test(input.header('authorization'));
  try {
    if (input.body === undefined) throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
    const credentials = clientCredentials(input.header('authorization'), input.body);
    basicUsed = credentials.basic;
    const client = await input.scope.authenticateClient(credentials);
    return await work(input.body, client);
  } catch (error) {
    if (error instanceof OAuthError) return oauthFailure(error, basicUsed);
    throw error;
  }
}

function tokenResponse(issued: IssuedTokens) {
  return respond({
    status: 200,
    body: {
      access_token: issued.accessToken,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
      scope: issued.scopes.join(' '),
      ...(issued.refreshToken ? { refresh_token: issued.refreshToken } : {}),
    },
    headers: NO_STORE,
  });
}

const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'];

function metadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: `${issuer}/oauth2/token`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    introspection_endpoint: `${issuer}/oauth2/introspect`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    grant_types_supported: GRANT_TYPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: ['api:read', 'api:write'],
    authorization_response_iss_parameter_supported: true,
  };
}

const MetadataSchema = record(
  {
    issuer: text({ max: 2048 }),
    authorization_endpoint: text({ max: 2048 }),
    token_endpoint: text({ max: 2048 }),
    revocation_endpoint: text({ max: 2048 }),
    introspection_endpoint: text({ max: 2048 }),
    jwks_uri: text({ max: 2048 }),
    grant_types_supported: arrayOf(text({ max: 100 })),
    response_types_supported: arrayOf(text({ max: 100 })),
    response_modes_supported: arrayOf(text({ max: 100 })),
    code_challenge_methods_supported: arrayOf(text({ max: 100 })),
    token_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    revocation_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    introspection_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    scopes_supported: arrayOf(text({ max: 100 })),
    authorization_response_iss_parameter_supported: bool(),
  },
  'RFC 8414 authorization server metadata',
);

// ---- The HTML pages -------------------------------------------------------------------------

/** Single values only: a repeated parameter is treated as absent, which each check then refuses. */
function singles(source: Record<string, unknown> | undefined, names: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of names) {
    const value = source?.[name];
    out[name] = typeof value === 'string' && value.length <= 4096 ? value : undefined;
  }
  return out;
}

function cookie(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

/**
 * Login CSRF defence (double submit): the form carries the same random value as a SameSite=Strict
 * cookie, which a cross-site page can neither read nor send.
 */
function csrfPair(header: string, secure: boolean): { value: string; setCookie?: string } {
  const name = csrfCookieName(secure);
  const existing = cookie(header, name);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { value: existing };
  const value = randomBytes(32).toString('base64url');
  return { value, setCookie: `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}` };
}

function isHttps(issuer: string): boolean {
  return issuer.startsWith('https:');
}

function csrfMatches(header: string, submitted: string | undefined, secure: boolean): boolean {
  const expected = cookie(header, csrfCookieName(secure));
  if (!expected || !submitted) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

function html(status: number, body: string, options: { formTarget?: string; setCookie?: string } = {}) {
  const formAction = options.formTarget ? `'self' ${new URL(options.formTarget).origin}` : "'self'";
  return respond({
    status,
    body,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      ...NO_STORE,
      // A redirect after a form post must match form-action too: the client's origin is allowed.
      'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      ...(options.setCookie ? { 'Set-Cookie': options.setCookie } : {}),
    },
  });
}

function redirect(location: string) {
  return respond({ status: 303, body: undefined, headers: { Location: location, ...NO_STORE } });
}

async function authorizationPage(
  scope: TokenServiceScope,
  params: Record<string, string | undefined>,
  cookieHeader: string,
  extra: { status?: number; email?: string; error?: string; notice?: string } = {},
) {
  const checked = await scope.checkAuthorization(params);
  if (!checked.ok) return 'shownHere' in checked ? html(400, errorPage(checked.shownHere)) : redirect(checked.redirectTo);
  const csrf = csrfPair(cookieHeader, isHttps(scope.issuer));
  return html(
    extra.status ?? 200,
    signInPage({ clientName: checked.request.client.name, params, scopes: checked.request.scopes, csrf: csrf.value, ...extra }),
    { formTarget: checked.request.redirectUri, setCookie: csrf.setCookie },
  );
}

const PAGE = { status: 200, description: 'An HTML page', contentType: 'text/html' };

/** The metadata is served at both discovery addresses clients look at. */
function metadataRoute(path: string, operationId: string, summary: string, description?: string) {
  return defineRoute<TokenServiceScope>({
    method: 'GET',
    path,
    operationId,
    summary,
    description,
    tags: ['discovery'],
    auth: 'none',
    success: { status: 200, description: 'Metadata', schema: MetadataSchema },
    errors: [],
    handler: async ({ scope }) => metadata(scope.issuer),
  });
}

/** The token service's routes: health, keys, metadata, the sign-in and sign-up pages, and the OAuth endpoints. */
export const tokenServiceRoutes = [
  ...healthRoutes,
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/.well-known/jwks.json',
    operationId: 'getJwks',
    summary: 'The public keys that verify platform tokens (RFC 7517)',
    description: 'Every key that still verifies, the signing one included. A rotated-in key appears here before it signs.',
    tags: ['keys'],
    auth: 'none',
    success: { status: 200, description: 'A JSON Web Key Set', schema: record({ keys: arrayOf(JwkSchema) }) },
    errors: [],
    handler: async ({ scope }) => scope.jwks(),
  }),
  metadataRoute('/.well-known/oauth-authorization-server', 'getAuthorizationServerMetadata', 'Authorization server metadata (RFC 8414)'),
  metadataRoute(
    '/.well-known/openid-configuration',
    'getOpenIdConfiguration',
    'The same metadata at the OpenID discovery address, for clients that look there',
    'This is an OAuth 2.0 authorization server, not an OpenID Provider: no ID tokens, no userinfo.',
  ),
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/oauth2/authorize',
    operationId: 'authorize',
    summary: 'Authorization endpoint (RFC 6749 section 4.1): the developer sign-in page',
    description:
      'Query: response_type=code, client_id, redirect_uri (exact; a loopback URI registered without a port matches any port, ' +
      'RFC 8252), code_challenge with code_challenge_method=S256 (PKCE is required; plain is refused), optional scope and state. ' +
      'An unknown client or unregistered redirect_uri gets an HTML error page (400); other errors are redirected to the client ' +
      '(303) with `error`, `state` and `iss` (RFC 9207).',
    tags: ['oauth'],
    auth: 'none',
    success: PAGE,
    errors: [303],
    handler: async ({ rawQuery, header, scope }) =>
      authorizationPage(scope, singles(rawQuery, AUTHORIZATION_PARAMS), header('cookie'), {
        notice: rawQuery.signed_up === '1' ? 'Your account is ready: sign in to continue.' : undefined,
      }),
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/oauth2/authorize',
    operationId: 'authorizeSignIn',
    summary: 'The sign-in form: on success, 303 to the redirect_uri with a code (60 s, single use), state and iss',
    description:
      'Form fields: the authorization request parameters, csrf, email, password. A wrong email or password shows the form ' +
      'again (401); repeated failures wait (429). A developer who is not a member of a workspace client\'s workspace is sent ' +
      'back with error=access_denied.',
    tags: ['oauth'],
    auth: 'none',
    form: true,
    success: { status: 303, description: 'Back to the client with a code' },
    errors: [401, 429],
    handler: async ({ body, header, scope, clientAddress }) => {
      const params = singles(body, AUTHORIZATION_PARAMS);
      const fields = singles(body, ['csrf', 'email', 'password']);
      const cookieHeader = header('cookie');
      if (!csrfMatches(cookieHeader, fields.csrf, isHttps(scope.issuer))) {
        return authorizationPage(scope, params, cookieHeader, { status: 403, error: 'The form expired; please sign in again.' });
      }
      const checked = await scope.checkAuthorization(params);
      if (!checked.ok) return 'shownHere' in checked ? html(400, errorPage(checked.shownHere)) : redirect(checked.redirectTo);
      try {
        return redirect(await scope.signInAndAuthorize(checked.request, { email: fields.email ?? '', password: fields.password ?? '' }, clientAddress));
      } catch (error) {
        if (error instanceof UnauthenticatedError) {
          return authorizationPage(scope, params, cookieHeader, { status: 401, email: fields.email, error: 'Email or password is incorrect.' });
        }
        if (error instanceof RateLimitedError) {
          return authorizationPage(scope, params, cookieHeader, {
            status: 429,
            email: fields.email,
            error: `Too many failed attempts; try again in ${Math.ceil(error.retryAfterSeconds / 60)} minutes.`,
          });
        }
        throw error;
      }
    },
  }),
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/signup',
    operationId: 'signUpPage',
    summary: 'The developer sign-up page',
    description: 'Takes the authorization request parameters, to return to the sign-in page after the account is made.',
    tags: ['developers'],
    auth: 'none',
    success: PAGE,
    errors: [],
    handler: async ({ rawQuery, header, scope }) => {
      const params = singles(rawQuery, AUTHORIZATION_PARAMS);
      const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
      const csrf = csrfPair(header('cookie'), isHttps(scope.issuer));
      return html(200, signUpPage({ csrf: csrf.value, returnQuery: query.toString() }), { setCookie: csrf.setCookie });
    },
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/signup',
    operationId: 'signUp',
    summary: 'Creates a developer account (email, password, name), then returns to the sign-in page',
    description:
      'A taken email (case-insensitively) answers 409 with the form again; bad input 400; more than ' +
      'LOGIN_MAX_FAILURES_PER_CLIENT sign-ups from one address within LOGIN_FAILURE_WINDOW, 429.',
    tags: ['developers'],
    auth: 'none',
    form: true,
    success: { status: 303, description: 'To the sign-in page of the authorization request, or a confirmation page' },
    errors: [409, 429],
    handler: async ({ body, header, scope, clientAddress }) => {
      const fields = singles(body, ['csrf', 'email', 'password', 'name', 'return']);
      const cookieHeader = header('cookie');
      const returnQuery = /^[\w.~%=&+-]*$/.test(fields.return ?? '') ? (fields.return ?? '') : '';
      const secure = isHttps(scope.issuer);
      const again = (status: number, error: string) => {
        const csrf = csrfPair(cookieHeader, secure);
        return html(status, signUpPage({ csrf: csrf.value, returnQuery, email: fields.email, name: fields.name, error }), { setCookie: csrf.setCookie });
      };
      if (!csrfMatches(cookieHeader, fields.csrf, secure)) return again(403, 'The form expired; please try again.');
      try {
        await scope.signUp({ email: fields.email ?? '', password: fields.password ?? '', name: fields.name }, clientAddress);
      } catch (error) {
        if (error instanceof ValidationError) return again(400, error.message);
        if (error instanceof ConflictError) return again(409, error.message);
        if (error instanceof RateLimitedError) return again(429, `Too many sign-ups from here; try again in ${Math.ceil(error.retryAfterSeconds / 60)} minutes.`);
        throw error;
      }
      if (new URLSearchParams(returnQuery).get('client_id')) return redirect(`/oauth2/authorize?${returnQuery}&signed_up=1`);
      return html(200, messagePage('Account created', 'Your account is ready. Sign in from the application you use, for example `npm run login`.'));
    },
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/oauth2/token',
    operationId: 'token',
    summary: 'Token endpoint (RFC 6749): authorization_code (with PKCE), refresh_token, client_credentials',
    description:
      'Form-encoded. Confidential clients authenticate by HTTP Basic or client_id/client_secret in the form (both: ' +
      'invalid_request); public clients send client_id only. authorization_code needs code, redirect_uri (exactly as ' +
      'authorized) and code_verifier; a replayed code revokes what its first use issued. refresh_token rotates: the answer ' +
      'carries a new refresh token, and reusing a spent one revokes its whole family; `scope` may only narrow. ' +
      'client_credentials is for confidential workspace clients. Errors are RFC 6749 `{error, error_description}` (400; 401 ' +
      'invalid_client). Responses carry Cache-Control: no-store.',
    tags: ['oauth'],
    auth: 'none',
    form: true,
    success: { status: 200, description: 'Tokens', schema: TokenResponse },
    errors: [401],
    handler: async (input) => {
      // The grant is checked before the client is authenticated, so an unknown grant costs no lookup.
      const grantType = input.body === undefined || typeof input.body.grant_type !== 'string' ? undefined : input.body.grant_type;
      if (input.body !== undefined && grantType === undefined) {
        return oauthFailure(new OAuthError('invalid_request', "'grant_type' is required, once"), false);
      }
      if (grantType !== undefined && !GRANT_TYPES.includes(grantType)) {
        return oauthFailure(new OAuthError('unsupported_grant_type', `grant_type '${grantType.slice(0, 100)}' is not supported`), false);
      }
      return oauthEndpoint(input, async (form, client) => {
        const { scope } = input;
        if (grantType === 'client_credentials') return tokenResponse(await scope.clientCredentials(client, single(form, 'scope')));
        if (grantType === 'authorization_code') {
          return tokenResponse(
            await scope.authorizationCode(client, {
              code: single(form, 'code'),
              redirectUri: single(form, 'redirect_uri'),
              codeVerifier: single(form, 'code_verifier'),
            }),
          );
        }
        return tokenResponse(await scope.refresh(client, { refreshToken: single(form, 'refresh_token'), scope: single(form, 'scope') }));
      });
    },
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/oauth2/revoke',
    operationId: 'revoke',
    summary: 'Token revocation (RFC 7009)',
    description:
      'Form: token, optional token_type_hint. Revoking a refresh token, or an access token from the authorization_code ' +
      'grant, revokes its whole family: the token service refuses its refresh tokens at once, and the management API refuses ' +
      'its access tokens within REVOCATION_POLL_MS (5 s by default). Unknown tokens, tokens of other clients and ' +
      'client_credentials access tokens (no family; deleting the client ends them) answer 200 and change nothing.',
    tags: ['oauth'],
    auth: 'none',
    form: true,
    success: { status: 200, description: 'Revoked, or nothing to revoke' },
    errors: [401],
    handler: async (input) =>
      oauthEndpoint(input, async (form, client) => {
        const token = single(form, 'token');
        if (!token) throw new OAuthError('invalid_request', "'token' is required");
        await input.scope.revoke(client, token, single(form, 'token_type_hint'));
        return respond({ status: 200, body: '', headers: NO_STORE });
      }),
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/oauth2/introspect',
    operationId: 'introspect',
    summary: 'Token introspection (RFC 7662), for confidential clients about their own tokens',
    description: 'Form: token. Anything not issued to the calling client, expired, spent or revoked is `{"active": false}`.',
    tags: ['oauth'],
    auth: 'none',
    form: true,
    success: {
      status: 200,
      description: 'RFC 7662 section 2.2',
      schema: record({
        active: bool(),
        token_type: optional(text({ max: 100 })),
        scope: optional(text({ max: 1000 })),
        client_id: optional(text({ max: 100 })),
        sub: optional(text({ max: 100 })),
        aud: optional(arrayOf(text({ max: 2048 }))),
        iss: optional(text({ max: 2048 })),
        iat: optional(int('Seconds since the epoch')),
        exp: optional(int('Seconds since the epoch')),
      }),
    },
    errors: [401],
    handler: async (input) =>
      oauthEndpoint(input, async (form, client) => {
        const token = single(form, 'token');
        if (!token) throw new OAuthError('invalid_request', "'token' is required");
        return respond({ status: 200, body: await input.scope.introspect(client, token), headers: NO_STORE });
      }),
  }),
];

