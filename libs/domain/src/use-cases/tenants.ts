import { byCreated, firstPage, pageByKey, type Page, type PageRequest } from '../paging.js';
import { cleanTenantName } from '../account-rules.js';
import { requireManagement } from '../authorization.js';
import type { Principal, Tenant } from '../model.js';
import type { TenantPath } from '../paths.js';
import { endTenantCredentials, type CredentialDeps } from './credentials.js';
import { accessDatabase, accessTenant, type DataPlaneDeps } from './database-access.js';
import { requireLiveSession, tenantNotFound, tenantsOfSession } from './membership.js';

/** A developer sees every tenant; a user only the tenants they belong to. */
/**
 * A page of the tenants the caller sees: every tenant for a developer (paged in the database), the
 * user's own for a user (few; paged in memory).
 */
export async function listTenants(
  deps: DataPlaneDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseName: string,
  page: PageRequest = firstPage(),
): Promise<Page<Tenant>> {
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
  if (caller.kind !== 'user') return access.data.tenants.listPage(page);
  return pageByKey(await tenantsOfSession(access, caller), page, byCreated);
}

/** Creates a tenant; a user who creates one becomes its first member. */
export async function createTenant(
  deps: DataPlaneDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseName: string,
  input: { name: string; id?: string },
): Promise<Tenant> {
  const name = cleanTenantName(input.name);
  const access = await accessDatabase(deps, caller, { workspaceSlug, databaseName });
  // Choosing an id would let a user probe which tenant ids exist (409): developers only.
  if (input.id !== undefined) requireManagement(caller, 'Only a developer can choose a tenant id');
  await requireLiveSession(access, caller);
  const tenant = await access.data.tenants.create({ id: input.id, name });
  if (caller.kind === 'user') await access.data.users.link(tenant.id, caller.userId);
  return tenant;
}

export async function getTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath): Promise<Tenant> {
  return (await accessTenant(deps, caller, path)).tenant;
}

export async function renameTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath, name: string): Promise<Tenant> {
  const cleaned = cleanTenantName(name);
  const { data, tenant } = await accessTenant(deps, caller, path);
  const renamed = await data.tenants.rename(tenant.id, cleaned);
  if (!renamed) throw tenantNotFound(path.tenantId);
  return renamed;
}

/**
 * Only developers delete tenants, unless the platform lets members (TENANT_MEMBERS_DELETE_TENANTS):
 * a member who may not is refused, a stranger finds nothing. The
 * tenant's scoped credentials go first, so a failure leaves the tenant in place to delete again.
 */
export async function deleteTenant(
  deps: DataPlaneDeps & Pick<CredentialDeps, 'credentials' | 'loginRoles'> & { membersDeleteTenants?: boolean },
  caller: Principal,
  path: TenantPath,
): Promise<void> {
  const { data, database, tenant } = await accessTenant(deps, caller, path);
  if (!deps.membersDeleteTenants) requireManagement(caller, 'Only a developer can delete a tenant');
  await endTenantCredentials(deps, database, tenant.id);
  if (!(await data.tenants.delete(tenant.id))) throw tenantNotFound(path.tenantId);
}
