import {
  createTenant,
  createUserWithSession,
  currentUser,
  deleteSelf,
  deleteTenant,
  firstPage,
  getTenant,
  linkUser,
  listTenantUsers,
  listUserTenants,
  PAGE_SIZE_MAX,
  renameTenant,
  selfSignUp,
  unlinkUser,
  updateDatabaseUser,
} from '@platform/domain';
import { arrayOf, nullable, optional, record, respond, uuid } from '@platform/http';
import { defineManagementRoute } from '../management-scope.js';
import { emailField, passwordField, personNameField, pictureUrlField, tenantNameField } from '../request-fields.js';
import { TenantSchema, presentTenant } from '../tenant.presenter.js';
import { CurrentUserSchema, UserSchema, presentCurrentUser, presentUser } from '../user.presenter.js';
import { assertSdkOrigin } from './family-cookies.js';
import {
  COOKIE_AUTH,
  FAMILY_BASE,
  FAMILY_TAGS,
  SDK_ORIGIN_CSRF,
  cookiesOf,
  familyDatabaseParams,
  familyMemberParams,
  familyTenantParams,
  familyUserParams,
  signedIn,
  tokenDeps,
} from './family-route.js';

const UpdateSelfRequest = record({
  name: optional(nullable(personNameField('Display name'))),
  givenName: optional(nullable(personNameField('Given name'))),
  familyName: optional(nullable(personNameField('Family name'))),
  picture: optional(nullable(pictureUrlField)),
});
const CreateTenantRequest = record({ name: tenantNameField, id: optional(uuid('Refused for users (403): a tenant id is a developer’s choice')) });
const RenameTenantRequest = record({ name: tenantNameField });
const CreateUserRequest = record({
  email: emailField('Email'),
  password: passwordField,
  name: optional(personNameField('Display name')),
  givenName: optional(personNameField('Given name')),
  familyName: optional(personNameField('Family name')),
  picture: optional(pictureUrlField),
});
const CreateUserQuery = record({ tenantId: optional(uuid('The tenant to create the user in')), newTenantName: optional(tenantNameField) });
const CLEARS_SESSION = { 'Set-Cookie': 'Clears `nile.session-token`' };

export const familyResourceRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/me`,
    operationId: 'familyGetSelf',
    summary: 'The signed-in user, with the ids of their tenants',
    description: COOKIE_AUTH,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    success: { status: 200, description: 'The user', schema: CurrentUserSchema },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      return presentCurrentUser(await currentUser(scope, caller, path.workspaceSlug, path.databaseName));
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${FAMILY_BASE}/me`,
    operationId: 'familyUpdateSelf',
    summary: 'Update the signed-in user’s profile',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} Any of name, givenName, familyName, picture (null clears).`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    body: UpdateSelfRequest,
    success: { status: 200, description: 'The updated user', schema: UserSchema },
    errors: [404],
    handler: async ({ params, body, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      return presentUser(await updateDatabaseUser(scope, caller, path.workspaceSlug, path.databaseName, caller.userId, body));
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${FAMILY_BASE}/me`,
    operationId: 'familyDeleteSelf',
    summary: 'Delete the signed-in user’s account',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} Their memberships go and every session of theirs ends at once.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    success: { status: 204, description: 'Deleted; clears the session cookie', headers: CLEARS_SESSION },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const session = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      await deleteSelf(scope, session);
      return respond({ status: 204, headers: { 'Set-Cookie': cookiesOf(scope, header).clear('session-token') } });
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/users`,
    operationId: 'familyCreateUser',
    summary: 'Create a user: in a tenant as a member, or with a new tenant as self sign-up',
    description:
      `${SDK_ORIGIN_CSRF} With \`tenantId\`: the signed-in member creates a user in their tenant, as on the v2 create-user ` +
      'route (TENANT_MEMBERS_CREATE_USERS=true, else 403 developer_token_required; a stranger to the tenant gets 404). ' +
      'Without: the rules of POST /signup (the database’s selfSignUp setting, else 403 sign_up_disabled; its throttle, 429 ' +
      'too_many_attempts; a taken address’s owner mailed), `newTenantName` creating a tenant for the new user; nobody is signed in.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: CreateUserQuery,
    body: CreateUserRequest,
    success: { status: 201, description: 'Created', schema: CurrentUserSchema },
    errors: [404, 409, 429],
    handler: async ({ params, query, body, header, scope, clientAddress }) => {
      assertSdkOrigin(scope.familyAuth, header);
      if (query.tenantId !== undefined) {
        const token = cookiesOf(scope, header).get('session-token');
        const user = await createUserWithSession(scope, token, { databaseId: params.database, tenantId: query.tenantId }, body, clientAddress);
        return respond({ status: 201, body: presentCurrentUser({ user, tenantIds: [query.tenantId] }) });
      }
      const created = await selfSignUp({ ...scope, ...tokenDeps(scope) }, params.database, { ...body, newTenantName: query.newTenantName }, clientAddress, { signIn: false });
      return respond({ status: 201, body: presentCurrentUser(created) });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/users/{userId}/tenants`,
    operationId: 'familyUserTenants',
    summary: 'The tenants of the signed-in user',
    description: `${COOKIE_AUTH} Another user’s id is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyUserParams,
    success: { status: 200, description: 'Their tenants', schema: arrayOf(TenantSchema) },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      return (await listUserTenants(scope, caller, path.workspaceSlug, path.databaseName, params.userId)).map(presentTenant);
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/tenants`,
    operationId: 'familyCreateTenant',
    summary: 'Create a tenant; the signed-in user becomes its first member',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF}`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    body: CreateTenantRequest,
    success: { status: 201, description: 'Created', schema: TenantSchema },
    errors: [404],
    handler: async ({ params, body, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      return respond({ status: 201, body: presentTenant(await createTenant(scope, caller, path.workspaceSlug, path.databaseName, body)) });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/tenants/{tenantId}`,
    operationId: 'familyGetTenant',
    summary: 'A tenant of the signed-in user',
    description: `${COOKIE_AUTH} A tenant they do not belong to is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    success: { status: 200, description: 'The tenant', schema: TenantSchema },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      return presentTenant(await getTenant(scope, caller, { ...path, tenantId: params.tenantId }));
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${FAMILY_BASE}/tenants/{tenantId}`,
    operationId: 'familyRenameTenant',
    summary: 'Rename a tenant of the signed-in user',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} A tenant they do not belong to is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    body: RenameTenantRequest,
    success: { status: 200, description: 'The renamed tenant', schema: TenantSchema },
    errors: [404],
    handler: async ({ params, body, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      return presentTenant(await renameTenant(scope, caller, { ...path, tenantId: params.tenantId }, body.name));
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${FAMILY_BASE}/tenants/{tenantId}`,
    operationId: 'familyDeleteTenant',
    summary: 'Delete a tenant of the signed-in user (TENANT_MEMBERS_DELETE_TENANTS)',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} Only where members may delete their tenants (TENANT_MEMBERS_DELETE_TENANTS=true); otherwise 403 developer_token_required. A tenant they do not belong to is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    success: { status: 204, description: 'Deleted' },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      await deleteTenant(scope, caller, { ...path, tenantId: params.tenantId });
      return respond({ status: 204 });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/tenants/{tenantId}/users`,
    operationId: 'familyTenantUsers',
    summary: 'The members of a tenant of the signed-in user',
    description: `${COOKIE_AUTH} The first ${PAGE_SIZE_MAX} members, oldest first. A tenant they do not belong to is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    success: { status: 200, description: 'The members', schema: arrayOf(UserSchema) },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      return (await listTenantUsers(scope, caller, { ...path, tenantId: params.tenantId }, firstPage(PAGE_SIZE_MAX))).items.map(presentUser);
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${FAMILY_BASE}/tenants/{tenantId}/users/{userId}/link`,
    operationId: 'familyLinkUser',
    summary: 'Add an existing user to a tenant of the signed-in user (TENANT_MEMBERS_LINK_USERS)',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} Only where members may add users (TENANT_MEMBERS_LINK_USERS=true); otherwise 403 developer_token_required. A tenant they do not belong to is 404.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyMemberParams,
    success: { status: 200, description: 'The user, now a member', schema: UserSchema },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      return presentUser(await linkUser(scope, caller, { ...path, tenantId: params.tenantId }, params.userId));
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${FAMILY_BASE}/tenants/{tenantId}/users/{userId}/link`,
    operationId: 'familyUnlinkUser',
    summary: 'Remove a user from a tenant of the signed-in user',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} A member may remove themselves; anyone else only where members may add users (TENANT_MEMBERS_LINK_USERS=true), else 403.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyMemberParams,
    success: { status: 204, description: 'Removed' },
    errors: [404],
    handler: async ({ params, header, scope }) => {
      const { caller, path } = await signedIn(scope, params.database, header);
      assertSdkOrigin(scope.familyAuth, header);
      await unlinkUser(scope, caller, { ...path, tenantId: params.tenantId }, params.userId);
      return respond({ status: 204 });
    },
  }),
];
