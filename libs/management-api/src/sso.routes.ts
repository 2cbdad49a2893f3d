import {
  DomainError,
  deleteSsoProvider,
  finishSsoLogin,
  getSsoProvider,
  listDatabaseSsoProviders,
  listTenantSsoProviders,
  registerSsoProvider,
  ssoLocations,
  startSsoLogin,
  updateSsoProvider,
  type DatabasePath,
  type TenantPath,
  byCreated,
} from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, arrayOf, optional, record, respond, text, toApiError } from '@platform/http';
import { defineManagementRoute, PAGED, type ManagementScope } from './management-scope.js';
import { pagedList } from './paged-list.js';
import { DATABASE_PATH, TENANT_PATH, databasePathParams, tenantPathParams } from './path-params.js';
import { cookieValue } from './cookie-jar.js';
import { singleField } from './request-fields.js';
import { sessionCookieHeader } from './session-cookie.js';
import { failurePage, formPostPage, htmlPage } from './sso-pages.js';
import {
  SsoLocationSchema,
  SsoRegistrationPatch,
  SsoRegistrationRequest,
  SsoRegistrationSchema,
  presentLocation,
  presentRegistration,
  registrationInput,
} from './sso.presenter.js';

const providerPathParams = record({
  ...tenantPathParams.schema,
  providerName: text({ min: 1, max: 100, description: 'The provider’s name in the tenant: 1 to 63 letters, digits, dots, dashes or underscores' }),
});
const SsoFilterQuery = record({
  provider: optional(text({ min: 1, max: 100, description: 'Only providers of this name' })),
  email: optional(text({ min: 1, max: 320, description: 'Only providers whose emailDomains hold this email’s domain' })),
});
const PROVIDER_PATH = `${TENANT_PATH}/auth/oidc/providers/{providerName}`;
const MANAGED =
  'A developer (or a client of the workspace) only: a member of the tenant gets 403 developer_token_required, a tenant the ' +
  'caller cannot see 404.';

/** The tenant's OIDC paths under the public base URL, as a browser and the provider see them. */
function oidcBase(scope: ManagementScope, path: TenantPath): string {
  const base = scope.publicBaseUrl.replace(/\/+$/, '');
  const segments = ['workspaces', path.workspaceSlug, 'databases', path.databaseName, 'tenants', path.tenantId, 'auth', 'oidc'];
  return `${base}/${segments.map(encodeURIComponent).join('/')}`;
}

export const loginUrl = (scope: ManagementScope, path: DatabasePath, tenantId: string, provider: string) =>
  `${oidcBase(scope, { ...path, tenantId })}/providers/${encodeURIComponent(provider)}/login`;

/** The cookie that binds a sign-in to the browser that started it, scoped to the tenant's OIDC paths. */
function loginCookie(scope: ManagementScope, path: TenantPath, value: string, maxAgeSeconds: number): string {
  const secure = new URL(scope.publicBaseUrl).protocol === 'https:';
  const attributes = [
    `${loginCookieName(scope)}=${value}`,
    `Path=${new URL(oidcBase(scope, path)).pathname}`,
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
  ];
  if (secure) attributes.push('Secure');
  return attributes.join('; ');
}

function loginCookieName(scope: ManagementScope): string {
  return new URL(scope.publicBaseUrl).protocol === 'https:' ? '__Secure-auth.sso-login' : 'auth.sso-login';
}

const LOGIN_REDIRECT = (status: number) => ({
  status,
  description: 'To the provider’s authorization endpoint',
  headers: { Location: 'The provider’s login page', 'Set-Cookie': 'Binds the sign-in to this browser' },
});

/** Starts a sign-in (or a link) and sends the browser to the provider. */
async function loginRedirect(
  scope: ManagementScope,
  params: TenantPath & { providerName: string },
  status: number,
  input: { clientAddress: string; linkSessionToken?: string },
) {
  const start = await startSsoLogin(scope, params, params.providerName, { callbackUrl: `${oidcBase(scope, params)}/callback`, ...input });
  return respond({
    status,
    headers: { Location: start.location, 'Set-Cookie': loginCookie(scope, params, start.browserToken, start.maxAgeSeconds), 'Cache-Control': 'no-store' },
  });
}

const providerRoute = (method: 'GET' | 'DELETE', operationId: string, summary: string) => ({ method, path: PROVIDER_PATH, operationId, summary, tags: ['sso'] });

export const ssoRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/tenants/auth/oidc/locations`,
    operationId: 'listSsoLocations',
    summary: 'Login URLs of the tenants’ SSO providers',
    description:
      'No authentication: it shows what a login page shows. The SPEC types the answer as one uri string; this API answers an ' +
      'array with one item per enabled provider of a live tenant (tenantId, provider, uri), since a database has many. ' +
      '`email` keeps the providers whose emailDomains hold its domain, for a sign-in page that asks for the email first. An ' +
      'unknown database answers an empty array, as a database without providers does.',
    tags: ['sso'],
    auth: 'none',
    params: databasePathParams,
    query: SsoFilterQuery,
    success: { status: 200, description: 'Login URLs, by tenant then provider', schema: arrayOf(SsoLocationSchema) },
    errors: [],
    handler: async ({ params, query, scope }) =>
      (await ssoLocations(scope, params, query, (tenantId, provider) => loginUrl(scope, params, tenantId, provider))).map(presentLocation),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/tenants/auth/oidc/providers`,
    operationId: 'listDatabaseSsoProviders',
    summary: 'Every tenant’s SSO providers',
    description:
      'The SPEC types the answer as one TenantSSORegistration; this API answers an array (each item carries its tenantId), as ' +
      'the API family’s clients read it. `email` keeps the providers whose emailDomains hold its domain. ' +
      MANAGED,
    tags: ['sso'],
    auth: 'bearer',
    params: databasePathParams,
    query: record({ ...SsoFilterQuery.schema, ...pageQueryFields }),
    success: { status: 200, description: 'A page of registrations, oldest first', schema: arrayOf(SsoRegistrationSchema), headers: PAGE_LINK_HEADER },
    errors: [404, 409],
    handler: async (input) =>
      pagedList(await listDatabaseSsoProviders(input.scope, input.caller, input.params, { provider: input.query.provider, email: input.query.email }), input, byCreated, presentRegistration),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${TENANT_PATH}/auth/oidc/providers`,
    operationId: 'listTenantSsoProviders',
    summary: 'The tenant’s SSO providers',
    description: `${MANAGED} ${PAGED}`,
    tags: ['sso'],
    auth: 'bearer',
    params: tenantPathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of registrations, oldest first', schema: arrayOf(SsoRegistrationSchema), headers: PAGE_LINK_HEADER },
    errors: [404, 409],
    handler: async (input) => pagedList(await listTenantSsoProviders(input.scope, input.caller, input.params), input, byCreated, presentRegistration),
  }),
  defineManagementRoute({
    method: 'POST',
    path: PROVIDER_PATH,
    operationId: 'registerSsoProvider',
    summary: 'Register an SSO provider for the tenant',
    description:
      'The discovery document at configUrl is fetched and checked first: its issuer must be configUrl without ' +
      '/.well-known/openid-configuration, and it must name the authorization, token and JWKS endpoints, the code flow, PKCE ' +
      'S256 and an ID token algorithm we verify (502 provider_mismatch otherwise; 502 provider_config_error when it cannot ' +
      'be fetched). A configUrl that is not https, or whose name resolves (or redirects) to this machine, a private, ' +
      'link-local or reserved address, is refused with 400 invalid_config_url before anything is fetched (the message ' +
      'says so without naming the address). The provider ' +
      'must accept the callback URL {base_url}/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/callback. ' +
      '503 sso_not_configured when the platform has no SSO_SECRET_KEYS. ' +
      MANAGED,
    tags: ['sso'],
    auth: 'bearer',
    params: providerPathParams,
    body: SsoRegistrationRequest,
    success: { status: 200, description: 'Registered', schema: SsoRegistrationSchema },
    errors: [404, 409, 502, 503],
    handler: async ({ params, body, caller, scope }) =>
      presentRegistration(await registerSsoProvider(scope, caller, params, params.providerName, registrationInput(body))),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: PROVIDER_PATH,
    operationId: 'updateSsoProvider',
    summary: 'Change an SSO provider of the tenant',
    description:
      'Given fields overwrite, omitted ones keep their values. A given configUrl has its discovery document fetched and ' +
      'checked again, as on registration (502); without it nothing is fetched, so a provider that is down can still be ' +
      'disabled. A different configUrl is another provider: 400 client_secret_required unless clientSecret comes with it. ' +
      MANAGED,
    tags: ['sso'],
    auth: 'bearer',
    params: providerPathParams,
    body: SsoRegistrationPatch,
    success: { status: 200, description: 'Changed', schema: SsoRegistrationSchema },
    errors: [404, 409, 502, 503],
    handler: async ({ params, body, caller, scope }) =>
      presentRegistration(await updateSsoProvider(scope, caller, params, params.providerName, registrationInput(body))),
  }),
  defineManagementRoute({
    ...providerRoute('GET', 'getSsoProvider', 'Get an SSO provider of the tenant'),
    description: MANAGED,
    auth: 'bearer',
    params: providerPathParams,
    success: { status: 200, description: 'The registration', schema: SsoRegistrationSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentRegistration(await getSsoProvider(scope, caller, params, params.providerName)),
  }),
  defineManagementRoute({
    ...providerRoute('DELETE', 'deleteSsoProvider', 'Remove an SSO provider from the tenant'),
    description: 'Not in the SPEC. Users it signed in keep their accounts and sessions. ' + MANAGED,
    auth: 'bearer',
    params: providerPathParams,
    success: { status: 204, description: 'Removed' },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => {
      await deleteSsoProvider(scope, caller, params, params.providerName);
      return respond({ status: 204 });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${PROVIDER_PATH}/login`,
    operationId: 'startSsoLogin',
    summary: 'Start signing in with the tenant’s SSO provider',
    description:
      'Redirects to the provider with state, nonce and a PKCE S256 challenge, kept server-side for 10 minutes and usable once, ' +
      'and bound to this browser by a cookie. 404 unknown_oidc_provider, or provider_disabled. 429 too_many_attempts when the ' +
      'client’s address has 100 sign-ins under way, with Retry-After the seconds until the oldest of them expires.',
    tags: ['sso'],
    auth: 'none',
    params: providerPathParams,
    success: LOGIN_REDIRECT(302),
    errors: [404, 429, 503],
    handler: async ({ params, clientAddress, scope }) => loginRedirect(scope, params, 302, { clientAddress }),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${PROVIDER_PATH}/link`,
    operationId: 'linkSsoProvider',
    summary: 'Link the tenant’s SSO provider to the signed-in user’s account',
    description:
      'Not in the SPEC. The way for an existing account (a password user) to start signing in with SSO: the session cookie ' +
      'says who, and the request must come from an allowed origin (a form on the app), never a link another site can open. ' +
      'Redirects (303) to the provider, asking it to sign the user in again (prompt=login); the callback links the provider’s ' +
      'account to this user if their session is still live. 401 invalid_session without a live session.',
    tags: ['sso'],
    auth: 'session',
    params: providerPathParams,
    success: LOGIN_REDIRECT(303),
    errors: [404, 429, 503],
    handler: async ({ params, clientAddress, sessionToken, scope }) => loginRedirect(scope, params, 303, { clientAddress, linkSessionToken: sessionToken }),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${TENANT_PATH}/auth/oidc/callback`,
    operationId: 'finishSsoLogin',
    summary: 'Where the SSO provider sends the browser back',
    description:
      'Query: code, state (and iss, RFC 9207), or error. Answers a page that posts access_token, tenantId and userId to the ' +
      'registration’s redirectURI and submits itself (its Content-Security-Policy allows that form target and script only); it ' +
      'also sets the session cookie. The user is found by their account at the provider (issuer and subject), never by email ' +
      'alone: an email that already has an account answers 409 account_exists until its owner links the provider (POST ' +
      '.../providers/{providerName}/link). Failures answer an HTML page with the error code: 400 session_state_missing, session_state_mismatch ' +
      '(unknown, replayed, expired or from another browser), oidc_code_missing; 401 oidc_authentication_failed (the ID token ' +
      'or code did not hold), invalid_session (a link whose session ended); 403 email_not_verified, email_domain_not_allowed, ' +
      'not_a_member; 404 unknown_oidc_provider, provider_disabled, tenant_not_found; 409 account_exists, identity_taken; 502 ' +
      'provider_config_error; 503 client_secret_unreadable. A refused callback links, adds and creates nothing.',
    tags: ['sso'],
    auth: 'none',
    params: tenantPathParams,
    success: { status: 200, contentType: 'text/html', description: 'Signed in: the self-submitting form page' },
    responses: [
      htmlPage(400, 'State missing, unknown, replayed or from another browser; or no code'),
      htmlPage(401, 'The code or the ID token did not hold'),
      htmlPage(403, 'The email is not verified, not in the provider’s domains, or the user is not a member'),
      htmlPage(404, 'The provider or tenant is gone, or the provider is disabled'),
      htmlPage(409, 'The email has an account not linked to this provider'),
      htmlPage(502, 'The provider failed'),
      htmlPage(503, 'The database is busy or SSO is not configured'),
    ],
    errors: [],
    handler: async ({ params, queryString, header, scope }) => {
      const clear = loginCookie(scope, params, '', 0);
      const query = new URLSearchParams(queryString);
      try {
        const signedIn = await finishSsoLogin(scope, params, {
          query,
          state: singleField(query, 'state'),
          code: singleField(query, 'code'),
          error: singleField(query, 'error'),
          browserToken: cookieValue(header('cookie'), loginCookieName(scope)),
        });
        const { result, tenantId, registration } = signedIn;
        return formPostPage(registration.redirectUri, { access_token: result.token.jwt, tenantId, userId: result.user.id }, [
          sessionCookieHeader(scope.sessionCookie, result.session.token, result.session.maxAge),
          clear,
        ]);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        const { body } = toApiError(error);
        return failurePage(body.statusCode, body.errorCode, body.message, [clear]);
      }
    },
  }),
];
