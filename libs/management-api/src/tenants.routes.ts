import { createTenant, deleteTenant, getTenant, listTenants, renameTenant } from '@platform/domain';
import { defineRoute, respond, arrayOf, dateTime, nullable, optional, record, text, uuid } from '@platform/http';
import { signInDeps, type ManagementScope } from './management-scope.js';
import { databaseNameParam, workspaceSlugParam } from './common.js';

export const TenantSchema = record(
  { id: uuid(), name: nullable(text({ max: 255 })), created: dateTime(), updated: dateTime() },
  'A tenant of the database',
);

export function presentTenant(tenant: { id: string; name: string | null; created: Date; updated: Date }) {
  return { id: tenant.id, name: tenant.name, created: tenant.created.toISOString(), updated: tenant.updated.toISOString() };
}

export const DatabasePath = record({ workspaceSlug: workspaceSlugParam, databaseName: databaseNameParam });
export const TenantPath = record({ workspaceSlug: workspaceSlugParam, databaseName: databaseNameParam, tenantId: uuid('The tenant id') });
export type DatabasePathParams = { workspaceSlug: string; databaseName: string };
export type TenantPathParams = DatabasePathParams & { tenantId: string };

const D = '/workspaces/{workspaceSlug}/databases/{databaseName}';
const T = `${D}/tenants/{tenantId}`;
const TenantName = text({ min: 1, max: 255, description: 'The tenant’s name' });

export const tenantRoutes = [
  defineRoute<ManagementScope, DatabasePathParams>({
    method: 'GET',
    path: `${D}/tenants`,
    operationId: 'listTenants',
    summary: 'List tenants: all of them with a developer token, the user’s own with a user token',
    tags: ['tenants'],
    auth: 'bearer',
    params: DatabasePath,
    success: { status: 200, description: 'Tenants, oldest first', schema: arrayOf(TenantSchema) },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) =>
      (await listTenants(signInDeps(scope), caller, params.workspaceSlug, params.databaseName)).map(presentTenant),
  }),
  defineRoute<ManagementScope, DatabasePathParams, undefined, { name: string; id?: string }>({
    method: 'POST',
    path: `${D}/tenants`,
    operationId: 'createTenant',
    summary: 'Create a tenant',
    description:
      'Not in the SPEC, which shows no creation. `id` may be given (a UUID not in use: 409 otherwise). A user who creates a ' +
      'tenant becomes its first member.',
    tags: ['tenants'],
    auth: 'bearer',
    params: DatabasePath,
    body: record({ name: TenantName, id: optional(uuid('A tenant id of your choosing')) }),
    success: { status: 201, description: 'Created', schema: TenantSchema },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const tenant = await createTenant(signInDeps(scope), caller, params.workspaceSlug, params.databaseName, body);
      return respond({
        status: 201,
        body: presentTenant(tenant),
        headers: { Location: `/workspaces/${params.workspaceSlug}/databases/${params.databaseName}/tenants/${tenant.id}` },
      });
    },
  }),
  defineRoute<ManagementScope, TenantPathParams>({
    method: 'GET',
    path: T,
    operationId: 'getTenant',
    summary: 'Get a tenant',
    tags: ['tenants'],
    auth: 'bearer',
    params: TenantPath,
    success: { status: 200, description: 'The tenant', schema: TenantSchema },
    errors: [404, 409],
    handler: async ({ params, caller, scope }) => presentTenant(await getTenant(signInDeps(scope), caller, params)),
  }),
  defineRoute<ManagementScope, TenantPathParams, undefined, { name: string }>({
    method: 'PUT',
    path: T,
    operationId: 'updateTenant',
    summary: 'Rename a tenant',
    description: 'Only the name can change. Answers an array holding the tenant, as the SPEC shows.',
    tags: ['tenants'],
    auth: 'bearer',
    params: TenantPath,
    body: record({ name: TenantName }),
    success: { status: 200, description: 'The renamed tenant, in an array', schema: arrayOf(TenantSchema) },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => [presentTenant(await renameTenant(signInDeps(scope), caller, params, body.name))],
  }),
  defineRoute<ManagementScope, TenantPathParams>({
    method: 'DELETE',
    path: T,
    operationId: 'deleteTenant',
    summary: 'Delete a tenant and its memberships (developers only)',
    tags: ['tenants'],
    auth: 'bearer',
    params: TenantPath,
    success: { status: 204, description: 'Deleted' },
    errors: [403, 404, 409],
    handler: async ({ params, caller, scope }) => {
      await deleteTenant(signInDeps(scope), caller, params);
      return undefined;
    },
  }),
];
