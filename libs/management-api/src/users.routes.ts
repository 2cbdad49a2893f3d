import {
  PASSWORD_MAX_LENGTH,
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
  type LoginResult,
  type User,
  type UserPatch,
} from '@platform/domain';
import { defineRoute, respond, arrayOf, dateTime, int, nullable, oneOf, optional, record, text, uuid } from '@platform/http';
import { sessionCookie, signInDeps, type ManagementScope } from './management-scope.js';
import { DatabasePath, TenantPath, TenantSchema, presentTenant, type DatabasePathParams, type TenantPathParams } from './tenants.routes.js';
import { databaseNameParam, workspaceSlugParam } from './common.js';

const D = '/workspaces/{workspaceSlug}/databases/{databaseName}';
const T = `${D}/tenants/{tenantId}`;

const email = text({ min: 3, max: 320, pattern: /^[^\s@]+@[^\s@]+$/, description: 'An email address' });
/** Bounded before hashing: the cost of a sign-in is not the client's to choose. */
const password = text({ min: 1, max: PASSWORD_MAX_LENGTH, description: `8 to ${PASSWORD_MAX_LENGTH} characters` });
const profileText = (description: string) => text({ max: 255, description });
const pictureUrl = text({ max: 2048, description: 'A URL of the user’s picture' });

const userFields = {
  id: uuid(),
  email: text({ max: 320 }),
  name: nullable(text({ max: 255 })),
  givenName: nullable(text({ max: 255 })),
  familyName: nullable(text({ max: 255 })),
  picture: nullable(text({ max: 2048 })),
  created: dateTime(),
  emailVerified: nullable(dateTime()),
  updated: dateTime(),
};
export const UserSchema = record(userFields, 'A user of the database');

const LoginUserResponse = record(
  {
    id: uuid('The user id'),
    tenants: arrayOf(uuid(), 'Ids of the user’s tenants'),
    token: record({ jwt: text({ max: 4096 }), maxAge: int('Seconds'), type: oneOf(['ACCESS_TOKEN']) }),
  },
  'A signed-in user. The response also sets the session cookie.',
);

const CurrentUserSchema = record(
  { ...userFields, tenants: arrayOf(uuid(), 'Ids of the user’s tenants') },
  'The signed-in user with their tenants',
);

export function presentUser(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    givenName: user.givenName,
    familyName: user.familyName,
    picture: user.picture,
    created: user.created.toISOString(),
    emailVerified: user.emailVerified?.toISOString() ?? null,
    updated: user.updated.toISOString(),
  };
}

function signedIn(scope: ManagementScope, result: LoginResult, status: number) {
  return respond({
    status,
    body: { id: result.user.id, tenants: result.tenantIds, token: result.token },
    headers: { 'Set-Cookie': sessionCookie(scope, result.session.token, result.session.maxAge), 'Cache-Control': 'no-store' },
  });
}

type Credentials = { email: string; password: string };
const LoginRequest = record({ email, password });
const CreateBasicUserRequest = record({ email, password, name: optional(profileText('Recorded in users.users')) });
type BasicUser = { email: string; password: string; name?: string };
const UpdateUserRequest = record({
  name: optional(nullable(profileText('Display name'))),
  givenName: optional(nullable(profileText('Given name'))),
  familyName: optional(nullable(profileText('Family name'))),
  picture: optional(nullable(pictureUrl)),
});
const V2CreateUserRequest = record({
  email,
  password,
  name: optional(profileText('Display name')),
  givenName: optional(profileText('Given name')),
  familyName: optional(profileText('Family name')),
  picture: optional(pictureUrl),
});
type V2User = BasicUser & { givenName?: string; familyName?: string; picture?: string };
const UserInDatabase = record({ workspaceSlug: workspaceSlugParam, databaseName: databaseNameParam, userId: uuid('The user id') });
const UserInTenant = record({
  workspaceSlug: workspaceSlugParam,
  databaseName: databaseNameParam,
  tenantId: uuid('The tenant id'),
  userId: uuid('The user id'),
});
type UserInDatabaseParams = DatabasePathParams & { userId: string };
type UserInTenantParams = TenantPathParams & { userId: string };

export const userRoutes = [
  defineRoute<ManagementScope, TenantPathParams>({
    method: 'GET',
    path: `${T}/users`,
    operationId: 'listTenantUsers',
    summary: 'List the tenant’s users',
    tags: ['users'],
    auth: 'bearer',
    params: TenantPath,
    success: { status: 200, description: 'Members, oldest first', schema: arrayOf(UserSchema) },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => (await listTenantUsers(signInDeps(scope), caller, params)).map(presentUser),
  }),
  defineRoute<ManagementScope, TenantPathParams, undefined, BasicUser>({
    method: 'POST',
    path: `${T}/users`,
    operationId: 'createTenantUser',
    summary: 'Create a user in the tenant and sign them in',
    description: 'A developer, or a member of the tenant, may. The response sets the new user’s session cookie.',
    tags: ['users'],
    auth: 'bearer',
    params: TenantPath,
    body: CreateBasicUserRequest,
    success: { status: 201, description: 'Created and signed in', schema: LoginUserResponse },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => signedIn(scope, await signUp(signInDeps(scope), caller, params, body), 201),
  }),
  defineRoute<ManagementScope, TenantPathParams, undefined, Credentials>({
    method: 'POST',
    path: `${T}/users/login`,
    operationId: 'loginTenantUser',
    summary: 'Sign in to a tenant with email and password',
    description: 'Any failure, including a user who is not a member, answers the same 401. Repeated failures answer 429 with Retry-After.',
    tags: ['users'],
    auth: 'none',
    params: TenantPath,
    body: LoginRequest,
    success: { status: 200, description: 'Signed in; sets the session cookie', schema: LoginUserResponse },
    errors: [401, 429],
    handler: async ({ params, body, clientAddress, scope }) =>
      signedIn(scope, await signIn(signInDeps(scope), params, body, clientAddress), 200),
  }),
  defineRoute<ManagementScope, UserInTenantParams>({
    method: 'GET',
    path: `${T}/users/{userId}`,
    operationId: 'getTenantUser',
    summary: 'Get a user of the tenant',
    tags: ['users'],
    auth: 'bearer',
    params: UserInTenant,
    success: { status: 200, description: 'The user', schema: UserSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentUser(await getTenantUser(signInDeps(scope), caller, params, params.userId)),
  }),
  defineRoute<ManagementScope, UserInTenantParams>({
    method: 'PUT',
    path: `${T}/users/{userId}/link`,
    operationId: 'linkTenantUser',
    summary: 'Add an existing user of the database to the tenant',
    description: 'Not in the SPEC. A developer, or a member of the tenant, may. Adding a member again changes nothing.',
    tags: ['users'],
    auth: 'bearer',
    params: UserInTenant,
    success: { status: 200, description: 'The user, now a member', schema: UserSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentUser(await linkUser(signInDeps(scope), caller, params, params.userId)),
  }),
  defineRoute<ManagementScope, UserInTenantParams>({
    method: 'DELETE',
    path: `${T}/users/{userId}/link`,
    operationId: 'unlinkTenantUser',
    summary: 'Remove a user from the tenant',
    description: 'Not in the SPEC. A developer, or a member of the tenant (themselves included), may. Takes effect at once.',
    tags: ['users'],
    auth: 'bearer',
    params: UserInTenant,
    success: { status: 204, description: 'Removed' },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => {
      await unlinkUser(signInDeps(scope), caller, params, params.userId);
      return undefined;
    },
  }),
  defineRoute<ManagementScope, DatabasePathParams, undefined, Credentials>({
    method: 'POST',
    path: `${D}/users/login`,
    operationId: 'loginUser',
    summary: 'Sign in to the database with email and password ({api_url})',
    tags: ['users'],
    auth: 'none',
    params: DatabasePath,
    body: LoginRequest,
    success: { status: 200, description: 'Signed in; sets the session cookie', schema: LoginUserResponse },
    errors: [401, 429],
    handler: async ({ params, body, clientAddress, scope }) =>
      signedIn(scope, await signIn(signInDeps(scope), params, body, clientAddress), 200),
  }),
  defineRoute<ManagementScope, DatabasePathParams>({
    method: 'POST',
    path: `${D}/users/logout`,
    operationId: 'logoutUser',
    summary: 'End the session of a user token ({api_url})',
    description: 'Not in the SPEC. The session, its cookie and every token issued with it stop working at once.',
    tags: ['users'],
    auth: 'bearer',
    params: DatabasePath,
    success: { status: 204, description: 'Signed out; clears the session cookie' },
    errors: [],
    handler: async ({ params, caller, scope }) => {
      await signOut(signInDeps(scope), caller, params.workspaceSlug, params.databaseName);
      return respond({ status: 204, headers: { 'Set-Cookie': sessionCookie(scope, '', 0) } });
    },
  }),
  defineRoute<ManagementScope, DatabasePathParams>({
    method: 'GET',
    path: `${D}/users/me`,
    operationId: 'getCurrentUser',
    summary: 'The signed-in user and the ids of their tenants ({api_url})',
    tags: ['users'],
    auth: 'bearer',
    params: DatabasePath,
    success: { status: 200, description: 'The user', schema: CurrentUserSchema },
    errors: [],
    handler: async ({ params, caller, scope }) => {
      const { user, tenantIds } = await currentUser(signInDeps(scope), caller, params.workspaceSlug, params.databaseName);
      return { ...presentUser(user), tenants: tenantIds };
    },
  }),
  defineRoute<ManagementScope, UserInDatabaseParams>({
    method: 'GET',
    path: `${D}/users/{userId}`,
    operationId: 'getUser',
    summary: 'Get a user of the database',
    description: 'A developer sees every user; a user sees themselves and the users they share a tenant with.',
    tags: ['users'],
    auth: 'bearer',
    params: UserInDatabase,
    success: { status: 200, description: 'The user', schema: UserSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) =>
      presentUser(await getDatabaseUser(signInDeps(scope), caller, params.workspaceSlug, params.databaseName, params.userId)),
  }),
  defineRoute<ManagementScope, UserInDatabaseParams, undefined, UserPatch>({
    method: 'PUT',
    path: `${D}/users/{userId}`,
    operationId: 'updateUser',
    summary: 'Update a user’s profile',
    description:
      'The SPEC leaves the shape open. Body: any of name, givenName, familyName, picture (null clears); omitted fields keep ' +
      'their values; email and password do not change here. Developers update anyone; users only themselves (403 for ' +
      'another user they can see). Answers the updated User.',
    tags: ['users'],
    auth: 'bearer',
    params: UserInDatabase,
    body: UpdateUserRequest,
    success: { status: 200, description: 'The updated user', schema: UserSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) =>
      presentUser(await updateDatabaseUser(signInDeps(scope), caller, params.workspaceSlug, params.databaseName, params.userId, body)),
  }),
  defineRoute<ManagementScope, UserInDatabaseParams>({
    method: 'GET',
    path: `${D}/users/{userId}/tenants`,
    operationId: 'listUserTenants',
    summary: 'List the tenants a user belongs to',
    description: 'Not in the SPEC. A developer may ask for any user; a user only for themselves.',
    tags: ['users'],
    auth: 'bearer',
    params: UserInDatabase,
    success: { status: 200, description: 'The user’s tenants', schema: arrayOf(TenantSchema) },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) =>
      (await listUserTenants(signInDeps(scope), caller, params.workspaceSlug, params.databaseName, params.userId)).map(presentTenant),
  }),
  defineRoute<ManagementScope, { database: string; tenantId: string }, undefined, V2User>({
    method: 'POST',
    path: '/v2/databases/{database}/tenants/{tenantId}/users',
    operationId: 'createTenantUserV2',
    summary: 'Create a user in a tenant, as a signed-in member (session cookie)',
    description:
      'Authenticated by the `auth.session-token` cookie (`__Secure-` prefixed under https) of a member of the tenant; ' +
      '`database` is the database id. A request whose Origin or Referer is not an allowed origin is refused with 403.',
    tags: ['users'],
    auth: 'session',
    params: record({ database: uuid('The database id'), tenantId: uuid('The tenant id') }),
    body: V2CreateUserRequest,
    success: { status: 201, description: 'Created and added to the tenant', schema: UserSchema },
    errors: [401, 403, 404, 409],
    handler: async ({ params, body, sessionToken, scope }) =>
      respond({
        status: 201,
        body: presentUser(await createUserWithSession(signInDeps(scope), sessionToken, { databaseId: params.database, tenantId: params.tenantId }, body)),
      }),
  }),
];
