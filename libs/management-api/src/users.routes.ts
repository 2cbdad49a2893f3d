import {
  createUserWithSession,
  currentUser,
  getDatabaseUser,
  getTenantUser,
  linkUser,
  listTenantUsers,
  listUserTenants,
  signIn,
  signOut,
  signUp,
  unlinkUser,
  updateDatabaseUser,
  UnauthenticatedError,
} from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, pageRequest, pagedAnswer, respond, arrayOf, nullable, optional, record, uuid, type Describe, type Infer } from '@platform/http';
import { assertAllowedBrowserOrigin, assertSdkOrigin } from './family-auth/family-cookies.js';
import { cookiesOf } from './family-auth/family-route.js';
import { defineManagementRoute, HASHING_429, PAGED, type ManagementScope } from './management-scope.js';
import { DATABASE_PATH, TENANT_PATH, databasePathParams, tenantPathParams, userInDatabasePathParams, userInTenantPathParams } from './path-params.js';
import { emailField, passwordField, personNameField, pictureUrlField } from './request-fields.js';
import { cookieValue } from './cookie-jar.js';
import { hasSessionCookie, sessionCookieHeader } from './session-cookie.js';
import { TenantSchema, presentTenant } from './tenant.presenter.js';
import { CurrentUserSchema, SignedInUserSchema, UserSchema, presentCurrentUser, presentSignedIn, presentUser } from './user.presenter.js';

const email = emailField('An email address');
const LoginRequest = record({ email, password: passwordField });
const CreateBasicUserRequest = record({ email, password: passwordField, name: optional(personNameField('Recorded in users.users')) });
const UpdateUserRequest = record({
  name: optional(nullable(personNameField('Display name'))),
  givenName: optional(nullable(personNameField('Given name'))),
  familyName: optional(nullable(personNameField('Family name'))),
  picture: optional(nullable(pictureUrlField)),
});
const V2CreateUserRequest = record({
  email,
  password: passwordField,
  name: optional(personNameField('Display name')),
  givenName: optional(personNameField('Given name')),
  familyName: optional(personNameField('Family name')),
  picture: optional(pictureUrlField),
});
/**
 * The session of the v2 create-user route: the API family's `nile.session-token` (what their SDK
 * sends) with its CSRF proof (the `nile-origin` header), or the SPEC's `auth.session-token` from an
 * allowed origin. Both name the same sessions.
 */
function v2SessionToken(scope: ManagementScope, header: (name: string) => string): string {
  const family = cookiesOf(scope, header).get('session-token');
  if (family) {
    assertSdkOrigin(scope.familyAuth, header);
    return family;
  }
  assertAllowedBrowserOrigin(scope.familyAuth, header);
  const token = cookieValue(header('cookie'), scope.sessionCookie.name);
  if (!token) throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
  return token;
}

/** Documents the cookie that sign-in sets and sign-out clears. */
const SESSION_COOKIE = { 'Set-Cookie': 'The session cookie (`auth.session-token`, `__Secure-` prefixed under https)' };

/** Password sign-in to a database, or to one tenant of it (the path says which). */
function passwordSignInRoute<P extends Infer<typeof databasePathParams> & { tenantId?: string }>(route: {
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  params: Describe<P>;
}) {
  return defineManagementRoute<P, undefined, Infer<typeof LoginRequest>>({
    method: 'POST',
    ...route,
    description: `${route.description ?? ''} ${HASHING_429}`.trim(),
    tags: ['users'],
    auth: 'none',
    body: LoginRequest,
    success: { status: 200, description: 'Signed in; sets the session cookie', schema: SignedInUserSchema, headers: SESSION_COOKIE },
    errors: [401, 429],
    handler: async ({ params, body, clientAddress, scope }) =>
      presentSignedIn(await signIn(scope, params, body, clientAddress), scope.sessionCookie, 200),
  });
}

export const userRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${TENANT_PATH}/users`,
    operationId: 'listTenantUsers',
    summary: 'List the tenant’s users',
    tags: ['users'],
    auth: 'bearer',
    description: PAGED,
    params: tenantPathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of members, oldest first', schema: arrayOf(UserSchema), headers: PAGE_LINK_HEADER },
    errors: [404, 409],
    handler: async ({ params, query, caller, scope, path, rawQuery }) =>
      pagedAnswer(await listTenantUsers(scope, caller, params, pageRequest(query)), presentUser, { path, rawQuery }),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${TENANT_PATH}/users`,
    operationId: 'createTenantUser',
    summary: 'Create a user in the tenant and sign them in',
    description:
      'A developer may; the response sets the new user’s session cookie. 409 email_taken when the email has an account in ' +
      'the database, in any tenant: attach that account with PUT T/users/{userId}/link. A user token of a member is 403 ' +
      'developer_token_required, whatever the email, unless the platform lets members create users ' +
      '(TENANT_MEMBERS_CREATE_USERS=true; then a member’s 409 tells them the email has an account somewhere in the database). ' +
      HASHING_429,
    tags: ['users'],
    auth: 'bearer',
    params: tenantPathParams,
    body: CreateBasicUserRequest,
    success: { status: 201, description: 'Created and signed in', schema: SignedInUserSchema, headers: SESSION_COOKIE },
    errors: [403, 404, 409, 429],
    handler: async ({ params, body, caller, scope, clientAddress }) => presentSignedIn(await signUp(scope, caller, params, body, clientAddress), scope.sessionCookie, 201),
  }),
  passwordSignInRoute({
    path: `${TENANT_PATH}/users/login`,
    operationId: 'loginTenantUser',
    summary: 'Sign in to a tenant with email and password',
    description: 'Any failure, including a user who is not a member, answers the same 401. Repeated failures answer 429 with Retry-After.',
    params: tenantPathParams,
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${TENANT_PATH}/users/{userId}`,
    operationId: 'getTenantUser',
    summary: 'Get a user of the tenant',
    tags: ['users'],
    auth: 'bearer',
    params: userInTenantPathParams,
    success: { status: 200, description: 'The user', schema: UserSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentUser(await getTenantUser(scope, caller, params, params.userId)),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${TENANT_PATH}/users/{userId}/link`,
    operationId: 'linkTenantUser',
    summary: 'Add an existing user of the database to the tenant',
    description:
      'Not in the SPEC. Developers only: a member of the tenant gets 403 developer_token_required. Adding a member again ' +
      'changes nothing.',
    tags: ['users'],
    auth: 'bearer',
    params: userInTenantPathParams,
    success: { status: 200, description: 'The user, now a member', schema: UserSchema },
    errors: [403, 404, 409],
    handler: async ({ params, caller, scope }) => presentUser(await linkUser(scope, caller, params, params.userId)),
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${TENANT_PATH}/users/{userId}/link`,
    operationId: 'unlinkTenantUser',
    summary: 'Remove a user from the tenant',
    description:
      'Not in the SPEC. A developer may remove anyone; a member of the tenant only themselves (anyone else: 403 ' +
      'developer_token_required). Takes effect at once.',
    tags: ['users'],
    auth: 'bearer',
    params: userInTenantPathParams,
    success: { status: 204, description: 'Removed' },
    errors: [403, 404, 409],
    handler: async ({ params, caller, scope }) => {
      await unlinkUser(scope, caller, params, params.userId);
      return undefined;
    },
  }),
  passwordSignInRoute({
    path: `${DATABASE_PATH}/users/login`,
    operationId: 'loginUser',
    summary: 'Sign in to the database with email and password ({api_url})',
    params: databasePathParams,
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${DATABASE_PATH}/users/logout`,
    operationId: 'logoutUser',
    summary: 'End the session of a user token ({api_url})',
    description:
      'Not in the SPEC. The session, its cookie and every token issued with it stop working at once. A developer token ' +
      'gets 403 user_token_required.',
    tags: ['users'],
    auth: 'bearer',
    params: databasePathParams,
    success: { status: 204, description: 'Signed out; clears the session cookie', headers: SESSION_COOKIE },
    errors: [403],
    handler: async ({ params, caller, scope }) => {
      await signOut(scope, caller, params.workspaceSlug, params.databaseName);
      return respond({ status: 204, headers: { 'Set-Cookie': sessionCookieHeader(scope.sessionCookie, '', 0) } });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/users/me`,
    operationId: 'getCurrentUser',
    summary: 'The signed-in user and the ids of their tenants ({api_url})',
    description: 'A developer token gets 403 user_token_required.',
    tags: ['users'],
    auth: 'bearer',
    params: databasePathParams,
    success: { status: 200, description: 'The user', schema: CurrentUserSchema },
    errors: [403],
    handler: async ({ params, caller, scope }) => presentCurrentUser(await currentUser(scope, caller, params.workspaceSlug, params.databaseName)),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/users/{userId}`,
    operationId: 'getUser',
    summary: 'Get a user of the database',
    description: 'A developer sees every user; a user sees themselves and the users they share a tenant with.',
    tags: ['users'],
    auth: 'bearer',
    params: userInDatabasePathParams,
    success: { status: 200, description: 'The user', schema: UserSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) =>
      presentUser(await getDatabaseUser(scope, caller, params.workspaceSlug, params.databaseName, params.userId)),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${DATABASE_PATH}/users/{userId}`,
    operationId: 'updateUser',
    summary: 'Update a user’s profile',
    description:
      'The SPEC leaves the shape open. Body: any of name, givenName, familyName, picture (null clears); omitted fields keep ' +
      'their values; email and password do not change here. Developers update anyone; users only themselves (403 for ' +
      'another user they can see). Answers the updated User.',
    tags: ['users'],
    auth: 'bearer',
    params: userInDatabasePathParams,
    body: UpdateUserRequest,
    success: { status: 200, description: 'The updated user', schema: UserSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) =>
      presentUser(await updateDatabaseUser(scope, caller, params.workspaceSlug, params.databaseName, params.userId, body)),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/users/{userId}/tenants`,
    operationId: 'listUserTenants',
    summary: 'List the tenants a user belongs to',
    description: 'Not in the SPEC. A developer may ask for any user; a user only for themselves.',
    tags: ['users'],
    auth: 'bearer',
    params: userInDatabasePathParams,
    success: { status: 200, description: 'The user’s tenants', schema: arrayOf(TenantSchema) },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) =>
      (await listUserTenants(scope, caller, params.workspaceSlug, params.databaseName, params.userId)).map(presentTenant),
  }),
  defineManagementRoute({
    method: 'POST',
    path: '/v2/databases/{database}/tenants/{tenantId}/users',
    operationId: 'createTenantUserV2',
    summary: 'Create a user in a tenant, as a signed-in member (session cookie)',
    description:
      'Authenticated by the session cookie of a member of the tenant: the SPEC’s `auth.session-token` (`__Secure-` prefixed ' +
      'under https), or the API family’s `nile.session-token` that their server SDK sends (`__Secure-` prefixed when its ' +
      '`nile-secure-cookies` header is true or under https), which also needs the `nile-origin` header naming an allowed origin ' +
      '(403 csrf_failed otherwise). `database` is the database id. A request whose Origin or Referer is not an allowed origin ' +
      'is refused with 403 cross_site_request. ' +
      'Only where the platform lets members create users (TENANT_MEMBERS_CREATE_USERS=true; 409 email_taken then tells the ' +
      'member the email has an account somewhere in the database); otherwise every member is 403 developer_token_required, ' +
      `whatever the email. ${HASHING_429}`,
    tags: ['users'],
    auth: 'cookie',
    security: ['sessionCookieAuth', 'familySessionCookie'],
    // An anonymous caller is refused before its body is read, as on every authenticated route.
    beforeBody: (header) => {
      if (!hasSessionCookie(header('cookie'))) throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
    },
    params: record({ database: uuid('The database id'), tenantId: uuid('The tenant id') }),
    body: V2CreateUserRequest,
    success: { status: 201, description: 'Created and added to the tenant', schema: UserSchema },
    errors: [401, 403, 404, 409, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      const user = await createUserWithSession(scope, v2SessionToken(scope, header), { databaseId: params.database, tenantId: params.tenantId }, body, clientAddress);
      return respond({ status: 201, body: presentUser(user) });
    },
  }),
];
