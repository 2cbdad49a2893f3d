import { finishFamilySsoLogin, ForbiddenError, isUuid, NotFoundError, startFamilySsoLogin, ValidationError } from '@platform/domain';
import { optional, queryBoolean, record, respond, text, uuid } from '@platform/http';
import { defineManagementRoute, type ManagementScope } from '../management-scope.js';
import { NO_STORE, UrlSchema, signedInHeaders } from './auth.routes.js';
import { allowedCallbackUrl, assertCsrfDoubleSubmit, assertSdkOrigin, type FamilyCookies } from './family-cookies.js';
import { singleField } from '../request-fields.js';
import { DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, cookiesOf } from './family-route.js';

/*
 * Sign-in through a tenant's OIDC provider on the API family's surface, as their SDK's
 * `signIn(provider)` and route handlers speak it (NextAuth's flow): POST /auth/signin/{provider}
 * answers the provider's authorization URL; the provider sends the browser back to the app's
 * `/api/auth/callback/{provider}`, which the SDK forwards to GET /auth/callback/{provider}; that
 * answer sets `nile.session-token`. The state, nonce and PKCE verifier travel sealed in the
 * `nile.sso-state` cookie (libs/domain family-sso.ts says why), spent once at the callback.
 */

const providerParams = record({
  database: uuid('The database id'),
  provider: text({ min: 1, max: 100, description: 'The provider’s name in the tenant' }),
});
const SignInRequest = record({
  csrfToken: optional(text({ max: 256, description: 'The token from GET /auth/csrf' })),
  callbackUrl: optional(text({ max: 2048, description: 'Where the app goes once signed in; kept only on an allowed origin' })),
  json: optional(queryBoolean('Sent by the SDK (`true`); the answer is JSON either way')),
});

/** The SDK's default route prefix: the app serves its auth routes under `/api`. */
const APP_ROUTE_PREFIX = '/api';

/** The redirect URI the provider must accept: the app's callback route, which the SDK forwards here. */
export function appCallbackUrl(appOrigin: string, provider: string): string {
  return `${appOrigin}${APP_ROUTE_PREFIX}/auth/callback/${encodeURIComponent(provider)}`;
}

/** The tenant the SDK names: its `nile.tenant-id` header, else its `nile.tenant-id` cookie (a UUID: nothing to decode). */
function namedTenant(header: (name: string) => string, cookies: FamilyCookies): string | undefined {
  return header('nile.tenant-id') || cookies.sent('nile.tenant-id');
}

/**
 * The SDK's callback route appends the incoming query to a URL that already carries it
 * (`?q?q`); undo exactly that, and nothing else.
 */
export function sentQuery(queryString: string): URLSearchParams {
  const half = (queryString.length - 1) / 2;
  const doubled = Number.isInteger(half) && half > 0 && queryString[half] === '?' && queryString.slice(0, half) === queryString.slice(half + 1);
  return new URLSearchParams(doubled ? queryString.slice(0, half) : queryString);
}

/** Where the app goes once signed in: the callback the sign-in kept, if allowed, else the app's origin. */
function landing(scope: ManagementScope, cookies: FamilyCookies, appOrigin: string): string {
  let kept: string | undefined;
  try {
    kept = decodeURIComponent(cookies.get('callback-url') ?? '');
  } catch {
    kept = undefined;
  }
  return allowedCallbackUrl(scope.familyAuth, kept) ?? appOrigin;
}

export const familySsoRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/auth/signin/{provider}`,
    operationId: 'familySsoSignIn',
    summary: 'Start signing in with the tenant’s OIDC provider (answers its authorization URL)',
    description:
      `${DOUBLE_SUBMIT_CSRF} The \`nile-origin\` header (the app, as the SDK sends it) must name an allowed origin too. The tenant ` +
      'is the `nile.tenant-id` header (or cookie) the SDK forwards: 400 tenant_required without a tenant id; 404 tenant_not_found, ' +
      'unknown_oidc_provider (`credentials` too: password sign-in is POST /auth/callback/credentials) or provider_disabled, as for the SPEC’s login. The provider must accept the app’s redirect URI ' +
      '`{nile-origin}/api/auth/callback/{provider}`. State, nonce and a PKCE S256 challenge travel in the `nile.sso-state` cookie, ' +
      'sealed (authenticated encryption, bound to this database) for 10 minutes; nothing is kept server-side until the callback spends ' +
      'the state, so starting sign-ins is not limited per address (every request comes from the app’s server).',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: providerParams,
    body: SignInRequest,
    formOrJson: true,
    success: {
      status: 200,
      description: 'The provider’s authorization URL, for the browser to go to',
      schema: UrlSchema,
      headers: { 'Set-Cookie': '`nile.sso-state` (the sealed sign-in, binding it to this browser) and `nile.callback-url`, when allowed' },
    },
    errors: [400, 403, 404, 503],
    handler: async ({ params, body, header, scope }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      assertSdkOrigin(scope.familyAuth, header);
      if (params.provider === 'credentials') throw new NotFoundError('unknown_oidc_provider', 'Password sign-in is POST /auth/callback/credentials');
      const tenantId = namedTenant(header, cookies);
      if (!tenantId || !isUuid(tenantId)) throw new ValidationError('tenant_required', 'Name the tenant whose provider signs in: the nile.tenant-id header or cookie, a tenant id');
      const appOrigin = header('nile-origin');
      const start = await startFamilySsoLogin(scope, params.database, tenantId, params.provider, { appOrigin, callbackUrl: appCallbackUrl(appOrigin, params.provider) });
      const next = allowedCallbackUrl(scope.familyAuth, body.callbackUrl);
      const setCookies = [cookies.set('sso-state', start.cookie, start.maxAgeSeconds)];
      if (next) setCookies.push(cookies.set('callback-url', encodeURIComponent(next)));
      return respond({ body: { url: start.location }, headers: { 'Set-Cookie': setCookies, ...NO_STORE } });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/callback/{provider}`,
    operationId: 'familySsoCallback',
    summary: 'Finish signing in with the tenant’s OIDC provider (sets the session cookie)',
    description:
      'Where the SDK forwards the provider’s answer (code, state, iss; or error), from the app’s `/api/auth/callback/{provider}`, ' +
      'with the browser’s cookies. The `nile-origin` header must name an allowed origin (403 csrf_failed) and be the app the sign-in ' +
      'started from; a browser Origin or Referer is not checked here (the provider sends the browser back cross-site), the state is. ' +
      'Answers 200 with Location (the SDK makes it the browser’s redirect; a 3xx here would be followed by its fetch and the cookie ' +
      'lost) to the sign-in’s callbackUrl or the app, setting `nile.session-token`: the session the platform revokes and expires. ' +
      'The user is found by their account at the provider, never by email alone, as in the SPEC’s callback. Refusals, with ' +
      'nothing linked, added or created: 400 session_state_missing (no state, or no `nile.sso-state` cookie), session_state_mismatch ' +
      '(a cookie altered, expired or sealed for another database; another browser’s state; another provider or app; a state spent ' +
      'already: each sign-in finishes once), oidc_code_missing; 401 oidc_authentication_failed, invalid_session; 403 csrf_failed, ' +
      'email_not_verified, email_domain_not_allowed, not_a_member; 404 unknown_oidc_provider, provider_disabled, tenant_not_found, ' +
      'database_not_found; 409 account_exists, identity_taken; 502 provider_config_error; 503 client_secret_unreadable.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: providerParams,
    success: {
      status: 200,
      description: 'Signed in',
      schema: UrlSchema,
      headers: { 'Set-Cookie': '`nile.session-token`; clears `nile.sso-state`', Location: 'Where the app goes next' },
    },
    errors: [400, 401, 403, 404, 409, 502, 503],
    handler: async ({ params, header, queryString, scope }) => {
      // Not the browser's Origin or Referer: this is the provider sending the browser back, cross-site by nature;
      // the state, once and bound to this browser, is what proves the request.
      const appOrigin = header('nile-origin');
      if (!scope.familyAuth.allowedOrigins.includes(appOrigin)) {
        throw new ForbiddenError('csrf_failed', 'The nile-origin header must name the allowed origin of the app the sign-in started from');
      }
      const cookies = cookiesOf(scope, header);
      const query = sentQuery(queryString);
      const signedIn = await finishFamilySsoLogin(
        scope,
        params.database,
        { query, state: singleField(query, 'state'), code: singleField(query, 'code'), error: singleField(query, 'error'), browserToken: cookies.get('sso-state') },
        { provider: params.provider, appOrigin, callbackUrl: appCallbackUrl(appOrigin, params.provider) },
      );
      const next = landing(scope, cookies, appOrigin);
      const headers = signedInHeaders(cookies, signedIn.result, next);
      return respond({
        body: { url: next },
        headers: { ...headers, 'Set-Cookie': [...(headers['Set-Cookie'] as string[]), cookies.clear('sso-state')] },
      });
    },
  }),
];

