import { TENANT_NAME_MAX_LENGTH } from '../account-rules.js';
import { ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError, ValidationError } from '../errors.js';
import type { DataPlane, DataPlaneRepositories, DatabaseLocator } from '../data-plane.js';
import type { Database, Principal, Tenant, UserPrincipal } from '../model.js';
import type { DatabaseRepository, WorkspaceRepository } from '../ports.js';
import { getDatabase } from './databases.js';

export interface DataPlaneDeps {
  workspaces: WorkspaceRepository;
  databases: DatabaseRepository;
  locator: DatabaseLocator;
  dataPlane: DataPlane;
}

/** The database a caller addresses, with its data-plane repositories. */
export interface DatabaseAccess {
  database: Database;
  data: DataPlaneRepositories;
}

function tokenNotForDatabase(): UnauthenticatedError {
  return new UnauthenticatedError('invalid_token', 'The token is not valid for this database');
}

export function sessionEnded(): UnauthenticatedError {
  return new UnauthenticatedError('invalid_token', 'The session of this token has ended');
}

function tenantNotFound(id: string): NotFoundError {
  return new NotFoundError('tenant_not_found', `Tenant '${id}' not found`);
}

function assertReady(database: Database): void {
  if (database.status !== 'READY') {
    throw new ConflictError('database_not_ready', `Database '${database.name}' is ${database.status}, not READY yet`);
  }
}

/**
 * A developer reaches the databases of their workspaces; a user token only the database it was
 * issued for (any other answers 401, whether it exists or not).
 */
export async function accessDatabase(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, name: string): Promise<DatabaseAccess> {
  let database: Database;
  if (caller.kind !== 'user') {
    database = await getDatabase(deps, caller, workspaceSlug, name);
  } else {
    const found = await deps.locator.findBySlugAndName(workspaceSlug, name);
    if (!found || found.id !== caller.databaseId) throw tokenNotForDatabase();
    database = found;
  }
  assertReady(database);
  return { database, data: deps.dataPlane.open(database) };
}

/** The database a sign-in addresses; a missing one fails like a wrong password. */
export async function locateForSignIn(deps: DataPlaneDeps, workspaceSlug: string, name: string, fail: () => Error): Promise<DatabaseAccess> {
  const database = await deps.locator.findBySlugAndName(workspaceSlug, name);
  if (!database || database.status !== 'READY') throw fail();
  return { database, data: deps.dataPlane.open(database) };
}

/** A user reaches a tenant only as a live member; otherwise it does not exist for them. */
export async function requireMembership(access: DatabaseAccess, caller: UserPrincipal, tenantId: string): Promise<void> {
  const { sessionValid, member } = await access.data.users.access(caller.userId, caller.sessionId, tenantId);
  if (!sessionValid) throw sessionEnded();
  if (!member) throw tenantNotFound(tenantId);
}

/** Resolves a tenant path: the database, then the tenant, as the caller may see it. */
export async function accessTenant(
  deps: DataPlaneDeps,
  caller: Principal,
  path: { workspaceSlug: string; databaseName: string; tenantId: string },
): Promise<DatabaseAccess & { tenant: Tenant }> {
  const access = await accessDatabase(deps, caller, path.workspaceSlug, path.databaseName);
  if (caller.kind === 'user') await requireMembership(access, caller, path.tenantId);
  const tenant = await access.data.tenants.find(path.tenantId);
  if (!tenant) throw tenantNotFound(path.tenantId);
  return { ...access, tenant };
}

/** A tenant name is trimmed and must keep at least one character. */
function cleanName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > TENANT_NAME_MAX_LENGTH) {
    throw new ValidationError('invalid_tenant_name', `Tenant name must be 1 to ${TENANT_NAME_MAX_LENGTH} characters, not only spaces`);
  }
  return trimmed;
}

/** A developer sees every tenant; a user only the tenants they belong to. */
export async function listTenants(deps: DataPlaneDeps, caller: Principal, workspaceSlug: string, databaseName: string): Promise<Tenant[]> {
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  if (caller.kind !== 'user') return access.data.tenants.list();
  const { sessionValid, tenants } = await access.data.tenants.listForUser(caller.userId, caller.sessionId);
  if (!sessionValid) throw sessionEnded();
  return tenants;
}

/** Creates a tenant; a user who creates one becomes its first member. */
export async function createTenant(
  deps: DataPlaneDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseName: string,
  input: { name: string; id?: string },
): Promise<Tenant> {
  const name = cleanName(input.name);
  const access = await accessDatabase(deps, caller, workspaceSlug, databaseName);
  // Choosing an id would let a user probe which tenant ids exist (409): developers only.
  if (caller.kind === 'user' && input.id !== undefined) {
    throw new ForbiddenError('developer_token_required', 'Only a developer can choose a tenant id');
  }
  if (caller.kind === 'user' && !(await access.data.sessions.isLive(caller.sessionId, caller.userId))) throw sessionEnded();
  const tenant = await access.data.tenants.create({ id: input.id, name });
  if (caller.kind === 'user') await access.data.users.link(tenant.id, caller.userId);
  return tenant;
}

export async function getTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath): Promise<Tenant> {
  return (await accessTenant(deps, caller, path)).tenant;
}

export type TenantPath = { workspaceSlug: string; databaseName: string; tenantId: string };

export async function renameTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath, name: string): Promise<Tenant> {
  const cleaned = cleanName(name);
  const { data, tenant } = await accessTenant(deps, caller, path);
  const renamed = await data.tenants.rename(tenant.id, cleaned);
  if (!renamed) throw tenantNotFound(path.tenantId);
  return renamed;
}

/** Only developers delete tenants: a member who tries is refused, a stranger finds nothing. */
export async function deleteTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath): Promise<void> {
  const { data, tenant } = await accessTenant(deps, caller, path);
  if (caller.kind === 'user') throw new ForbiddenError('developer_token_required', 'Only a developer can delete a tenant');
  if (!(await data.tenants.delete(tenant.id))) throw tenantNotFound(path.tenantId);
}
