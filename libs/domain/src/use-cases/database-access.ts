import type { DataPlane, DataPlaneRepositories, DatabaseLocator } from '../data-plane.js';
import { ConflictError, UnauthenticatedError } from '../errors.js';
import { shownDatabaseStatus } from '../database-status.js';
import type { Database, Principal, Tenant } from '../model.js';
import type { DatabasePath, TenantPath } from '../paths.js';
import type { DatabaseRepository, WorkspaceRepository } from '../ports.js';
import { getDatabase } from './databases.js';
import { requireMembership, tenantNotFound } from './membership.js';

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

function assertReady(database: Database): void {
  if (database.status !== 'READY') {
    throw new ConflictError('database_not_ready', `Database '${database.name}' is ${shownDatabaseStatus(database)}, not READY yet`);
  }
}

/**
 * A developer reaches the databases of their workspaces; a user token only the database it was
 * issued for (any other answers 401, whether it exists or not).
 */
export async function accessDatabase(deps: DataPlaneDeps, caller: Principal, path: DatabasePath): Promise<DatabaseAccess> {
  let database: Database;
  if (caller.kind !== 'user') {
    database = await getDatabase(deps, caller, path.workspaceSlug, path.databaseName);
  } else {
    const found = await deps.locator.findBySlugAndName(path.workspaceSlug, path.databaseName);
    if (!found || found.id !== caller.databaseId) throw tokenNotForDatabase();
    database = found;
  }
  assertReady(database);
  return { database, data: deps.dataPlane.open(database) };
}

/** Resolves a tenant path: the database, then the tenant, as the caller may see it. */
export async function accessTenant(deps: DataPlaneDeps, caller: Principal, path: TenantPath): Promise<DatabaseAccess & { tenant: Tenant }> {
  const access = await accessDatabase(deps, caller, path);
  if (caller.kind === 'user') await requireMembership(access, caller, path.tenantId);
  const tenant = await access.data.tenants.find(path.tenantId);
  if (!tenant) throw tenantNotFound(path.tenantId);
  return { ...access, tenant };
}
