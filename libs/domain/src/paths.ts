// How callers name what they address (SPEC paths): a database by its workspace's slug and its
// name, a tenant by its database's path and its id.

export interface DatabasePath {
  workspaceSlug: string;
  databaseName: string;
}

export interface TenantPath extends DatabasePath {
  tenantId: string;
}
