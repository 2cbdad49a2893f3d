import { randomUUID } from 'node:crypto';
import { assertDatabaseName } from '../database-name.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { firstPage, type Page, type PageRequest } from '../paging.js';
import type { Database, Principal, Workspace } from '../model.js';
import type { ClusterDirectory, DatabaseRepository, Provisioner, WorkspaceRepository } from '../ports.js';
import type { Region } from '../regions.js';
import { getWorkspace } from './workspaces.js';

export interface DatabaseDeps {
  workspaces: WorkspaceRepository;
  databases: DatabaseRepository;
}

export interface ProvisioningDeps {
  clusters: ClusterDirectory;
  provisioner: Provisioner;
}

/** Persists the database in REQUESTED and wakes the provisioner, which does the real work. */
export async function createDatabase(
  deps: DatabaseDeps & ProvisioningDeps,
  caller: Principal,
  workspaceSlug: string,
  input: { name: string; region: Region },
): Promise<Database> {
  assertDatabaseName(input.name);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  if (!deps.clusters.regions().includes(input.region)) {
    throw new ValidationError(
      'region_not_served',
      `Region ${input.region} is not served by this platform; served: ${deps.clusters.regions().join(', ')}`,
    );
  }
  const database = await deps.databases.create({ id: randomUUID(), workspace, name: input.name, region: input.region });
  deps.provisioner.nudge();
  return database;
}

/** A page of the workspace's live databases, oldest first. */
export async function listDatabases(deps: DatabaseDeps, caller: Principal, workspaceSlug: string, page: PageRequest = firstPage()): Promise<Page<Database>> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  return deps.databases.listLivePage(workspace, page);
}

export async function getDatabase(
  deps: DatabaseDeps,
  caller: Principal,
  workspaceSlug: string,
  name: string,
): Promise<Database> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  return findDatabase(deps, workspace, name);
}

async function findDatabase(deps: DatabaseDeps, workspace: Workspace, name: string): Promise<Database> {
  const database = await deps.databases.findLiveByName(workspace, name);
  if (!database) throw new NotFoundError('database_not_found', `Database '${name}' not found`);
  return database;
}

/** Renames in the control plane only: the physical database keeps its name, so connections survive. */
export async function renameDatabase(
  deps: DatabaseDeps,
  caller: Principal,
  workspaceSlug: string,
  name: string,
  newName: string,
): Promise<{ database: Database; previous: { id: string; name: string } }> {
  assertDatabaseName(newName);
  const database = await getDatabase(deps, caller, workspaceSlug, name);
  const previous = { id: database.id, name: database.name };
  const renamed = newName === database.name ? database : await deps.databases.rename(database, newName);
  return { database: renamed, previous };
}

/**
 * Marks the database deleted (so it disappears from the API at once and its name is free), then
 * drops the PostgreSQL database. Should the drop be interrupted, the provisioner finishes it.
 */
export async function deleteDatabase(
  deps: DatabaseDeps & ProvisioningDeps,
  caller: Principal,
  workspaceSlug: string,
  name: string,
): Promise<Database> {
  const database = await getDatabase(deps, caller, workspaceSlug, name);
  await deps.databases.markDeleted(database);
  await deps.provisioner.dropNow(database.id);
  return database;
}

/** The regions the platform serves, for a caller who belongs to the workspace. */
export async function listRegions(
  deps: { workspaces: WorkspaceRepository; clusters: ClusterDirectory },
  caller: Principal,
  workspaceSlug: string,
): Promise<readonly Region[]> {
  await getWorkspace(deps, caller, workspaceSlug);
  return deps.clusters.regions();
}
