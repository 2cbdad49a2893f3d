import { createTenant, deleteTenant, getTenant, listTenants, renameTenant } from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, pageRequest, pagedAnswer, respond, arrayOf, optional, record, uuid } from '@platform/http';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { DATABASE_PATH, TENANT_PATH, databasePathParams, tenantPathParams } from './path-params.js';
import { tenantNameField } from './request-fields.js';
import { TenantSchema, presentTenant } from './tenant.presenter.js';

const CreateTenantRequest = record({ name: tenantNameField, id: optional(uuid('A tenant id of your choosing (not the nil UUID)', { refuseNil: true })) });
const RenameTenantRequest = record({ name: tenantNameField });

export const tenantRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/tenants`,
    operationId: 'listTenants',
    summary: 'List tenants: all of them with a developer token, the user’s own with a user token',
    tags: ['tenants'],
    auth: 'bearer',
    description: PAGED,
    params: databasePathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of tenants, oldest first', schema: arrayOf(TenantSchema), headers: PAGE_LINK_HEADER },
    errors: [404, 409],
    handler: async ({ params, query, caller, scope, path, rawQuery }) =>
      pagedAnswer(await listTenants(scope, caller, params.workspaceSlug, params.databaseName, pageRequest(query)), presentTenant, { path, rawQuery }),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${DATABASE_PATH}/tenants`,
    operationId: 'createTenant',
    summary: 'Create a tenant',
    description:
      'Not in the SPEC, which shows no creation. `id` may be given (a UUID not in use: 409 otherwise) by a developer; a ' +
      'user who gives one gets 403 developer_token_required. A user who creates a tenant becomes its first member.',
    tags: ['tenants'],
    auth: 'bearer',
    params: databasePathParams,
    body: CreateTenantRequest,
    success: { status: 201, description: 'Created', schema: TenantSchema, headers: { Location: 'The new tenant' } },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const tenant = await createTenant(scope, caller, params.workspaceSlug, params.databaseName, body);
      return respond({
        status: 201,
        body: presentTenant(tenant),
        headers: { Location: `/workspaces/${params.workspaceSlug}/databases/${params.databaseName}/tenants/${tenant.id}` },
      });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: TENANT_PATH,
    operationId: 'getTenant',
    summary: 'Get a tenant',
    tags: ['tenants'],
    auth: 'bearer',
    params: tenantPathParams,
    success: { status: 200, description: 'The tenant', schema: TenantSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentTenant(await getTenant(scope, caller, params)),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: TENANT_PATH,
    operationId: 'updateTenant',
    summary: 'Rename a tenant',
    description: 'Only the name can change. Answers an array holding the tenant, as the SPEC shows.',
    tags: ['tenants'],
    auth: 'bearer',
    params: tenantPathParams,
    body: RenameTenantRequest,
    success: { status: 200, description: 'The renamed tenant, in an array', schema: arrayOf(TenantSchema) },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => [presentTenant(await renameTenant(scope, caller, params, body.name))],
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: TENANT_PATH,
    operationId: 'deleteTenant',
    summary: 'Delete a tenant and its memberships (developers only)',
    description: 'A member of the tenant gets 403 developer_token_required.',
    tags: ['tenants'],
    auth: 'bearer',
    params: tenantPathParams,
    success: { status: 204, description: 'Deleted' },
    errors: [403, 404, 409],
    handler: async ({ params, caller, scope }) => {
      await deleteTenant(scope, caller, params);
      return undefined;
    },
  }),
];
