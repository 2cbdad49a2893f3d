import {
  NotFoundError,
  UnauthenticatedError,
  enabledTenantProviders,
  familyDatabase,
  familySignIn,
  findFamilySession,
  isUuid,
  type LoginResult,
} from '@platform/domain';
import { bool, dateTime, mapOf, nullable, optional, record, respond, text, uuid } from '@platform/http';
import { defineManagementRoute, type ManagementScope } from '../management-scope.js';
import { emailField, passwordField } from '../request-fields.js';
import { allowedCallbackUrl, assertCsrfDoubleSubmit, csrfTokenOf, newCsrfToken, type FamilyCookies } from './family-cookies.js';
import { COOKIE_AUTH, DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, cookiesOf, familyBaseUrl, familyDatabaseParams } from './family-route.js';

const csrfField = optional(text({ max: 256, description: 'The token from GET /auth/csrf' }));
const callbackField = optional(text({ max: 2048, description: 'Where the app goes next; kept only on an allowed origin' }));
export const NO_STORE = { 'Cache-Control': 'no-store' };
export const SETS_COOKIES = { 'Set-Cookie': 'The session cookie (`nile.session-token`) and `nile.callback-url`', Location: 'Where the app goes next, when allowed' };

const CsrfSchema = record({ csrfToken: text({ max: 256 }) });
const ProviderSchema = record({
  id: text({ max: 128 }),
  name: text({ max: 128 }),
  type: text({ max: 32, description: '`credentials` or `oidc`' }),
  signinUrl: text({ max: 2048 }),
  callbackUrl: text({ max: 2048 }),
});
const SessionSchema = record(
  {
    user: optional(
      record({
        id: uuid(),
        email: text({ max: 320 }),
        name: nullable(text({ max: 256 })),
        image: nullable(text({ max: 2048 })),
        emailVerified: nullable(dateTime()),
      }),
    ),
    expires: optional(dateTime()),
  },
  'The session; `{}` when signed out',
);
export const UrlSchema = record({ url: text({ max: 2048 }) });

const SignInRequest = record({ email: emailField('Email'), password: passwordField, csrfToken: csrfField, callbackUrl: callbackField, json: optional(bool()), redirect: optional(bool()) });
const SignOutRequest = record({ csrfToken: csrfField, callbackUrl: callbackField, json: optional(bool()) });

/** Where to send the app after a form: the callback if allowed, else the SDK's allowed origin. */
export function nextUrl(scope: ManagementScope, header: (name: string) => string, callbackUrl: string | undefined): string | null {
  return allowedCallbackUrl(scope.familyAuth, callbackUrl) ?? allowedCallbackUrl(scope.familyAuth, header('nile-origin') || undefined);
}

/** A signed-in answer: the session cookie, the callback cookie, 2xx with Location (a 3xx would lose the cookies in fetch). */
export function signedInHeaders(cookies: FamilyCookies, result: LoginResult, next: string | null): Record<string, string | string[]> {
  const setCookies = [cookies.set('session-token', result.session.token, result.session.maxAge)];
  if (next) setCookies.push(cookies.set('callback-url', encodeURIComponent(next)));
  return { 'Set-Cookie': setCookies, ...NO_STORE, ...(next ? { Location: next } : {}) };
}

export const familyAuthRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/csrf`,
    operationId: 'familyCsrf',
    summary: 'The CSRF token of the double submit (API family SDK)',
    description:
      'Sets `nile.csrf-token` (`token|mac`) unless the request carries a valid one already: the SDK rebuilds its cookie jar ' +
      'from a new CSRF cookie and would drop the session with it.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    success: { status: 200, description: 'The token', schema: CsrfSchema, headers: { 'Set-Cookie': '`nile.csrf-token`, when new' } },
    errors: [],
    handler: async ({ header, scope }) => {
      const cookies = cookiesOf(scope, header);
      const held = csrfTokenOf(scope.familyAuth.csrfSecret, cookies.get('csrf-token'));
      if (held) return respond({ body: { csrfToken: held }, headers: NO_STORE });
      const fresh = newCsrfToken(scope.familyAuth.csrfSecret);
      return respond({ body: { csrfToken: fresh.token }, headers: { 'Set-Cookie': cookies.set('csrf-token', fresh.cookieValue), ...NO_STORE } });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/providers`,
    operationId: 'familyProviders',
    summary: 'How users sign in: credentials, and the tenant’s enabled OIDC providers',
    description:
      'The tenant is the `nile.tenant-id` header the SDK forwards; without one, credentials only. An OIDC ' +
      'provider’s signinUrl is POST /auth/signin/{provider} and its callbackUrl GET /auth/callback/{provider}, where the SDK ' +
      'forwards the app’s `/api/auth/callback/{provider}` (the redirect URI the provider must accept).',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    success: { status: 200, description: 'Providers by id', schema: mapOf(ProviderSchema) },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      await familyDatabase(scope, params.database);
      const base = familyBaseUrl(scope, params.database);
      const providers: Record<string, unknown> = {
        credentials: { id: 'credentials', name: 'Credentials', type: 'credentials', signinUrl: `${base}/auth/signin/credentials`, callbackUrl: `${base}/auth/callback/credentials` },
      };
      const tenantId = header('nile.tenant-id');
      if (isUuid(tenantId)) {
        for (const { provider } of await enabledTenantProviders(scope, params.database, tenantId)) {
          // A provider named `credentials` would shadow password sign-in here; the family surface cannot reach it.
          if (provider === 'credentials') continue;
          const name = encodeURIComponent(provider);
          providers[provider] = { id: provider, name: provider, type: 'oidc', signinUrl: `${base}/auth/signin/${name}`, callbackUrl: `${base}/auth/callback/${name}` };
        }
      }
      return respond({ body: providers, headers: NO_STORE });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/session`,
    operationId: 'familySession',
    summary: 'The signed-in user’s session, or `{}`',
    description: `${COOKIE_AUTH} Signed out (or a cookie of another database, or an unknown database) answers 200 \`{}\`: the SDK reads any other JSON as a live session.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    success: { status: 200, description: 'The session or `{}`', schema: SessionSchema },
    errors: [],
    handler: async ({ params, header, scope }) => {
      let session;
      try {
        session = await findFamilySession(scope, params.database, cookiesOf(scope, header).get('session-token'));
      } catch (error) {
        if (error instanceof NotFoundError) return respond({ body: {}, headers: NO_STORE });
        throw error;
      }
      if (!session) return respond({ body: {}, headers: NO_STORE });
      const { user } = session;
      return respond({
        body: {
          user: { id: user.id, email: user.email, name: user.name, image: user.picture, emailVerified: user.emailVerified?.toISOString() ?? null },
          expires: session.expires.toISOString(),
        },
        headers: NO_STORE,
      });
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/auth/callback/credentials`,
    operationId: 'familySignIn',
    summary: 'Sign in with email and password (sets the session cookie)',
    description:
      `${DOUBLE_SUBMIT_CSRF} The SPEC’s password sign-in to the database: the same 401 for any failure (its Location ends ` +
      'in `?error=CredentialsSignin`, as NextAuth says it), 429 with Retry-After after repeated failures. Answers 200 with ' +
      'Location (never a redirect, which fetch would follow and lose the cookie).',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    body: SignInRequest,
    success: { status: 200, description: 'Signed in', schema: UrlSchema, headers: SETS_COOKIES },
    errors: [401, 403, 404, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      const next = nextUrl(scope, header, body.callbackUrl);
      let result: LoginResult;
      try {
        result = await familySignIn(scope, params.database, body, clientAddress);
      } catch (error) {
        if (!(error instanceof UnauthenticatedError)) throw error;
        // As NextAuth answers: the error in the Location, which the SDK's signIn hands back as a 401 Response.
        const failed = `${familyBaseUrl(scope, params.database)}/auth/error?error=CredentialsSignin`;
        return respond({
          status: 401,
          body: { errorCode: error.code, message: error.message, statusCode: 401 },
          headers: { Location: failed, ...NO_STORE, ...(next ? { 'Set-Cookie': cookies.set('callback-url', encodeURIComponent(next)) } : {}) },
        });
      }
      return respond({ body: { url: next ?? familyBaseUrl(scope, params.database) }, headers: signedInHeaders(cookies, result, next) });
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/auth/signout`,
    operationId: 'familySignOut',
    summary: 'Sign out: the session ends and its cookie is cleared',
    description: `${DOUBLE_SUBMIT_CSRF} The session ends for good (every token issued with it too). Signed out already: the same answer.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    body: SignOutRequest,
    success: { status: 200, description: 'Signed out', schema: UrlSchema, headers: { 'Set-Cookie': 'Clears `nile.session-token`' } },
    errors: [403, 404],
    handler: async ({ params, body, header, scope }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      const session = await findFamilySession(scope, params.database, cookies.get('session-token'));
      if (session) await scope.dataPlane.open(session.database).sessions.revoke(session.caller.sessionId);
      const next = nextUrl(scope, header, body.callbackUrl);
      return respond({
        body: { url: next ?? familyBaseUrl(scope, params.database) },
        headers: { 'Set-Cookie': cookies.clear('session-token'), ...NO_STORE, ...(next ? { Location: next } : {}) },
      });
    },
  }),
];
