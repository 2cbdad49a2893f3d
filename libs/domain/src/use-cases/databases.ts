import { randomUUID } from 'node:crypto';
import { assertDatabaseName } from '../database-name.js';
import { isUuid } from '../uuid.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { firstPage, type Page, type PageRequest } from '../paging.js';
import type { Database, Principal, Workspace } from '../model.js';
import type { Clock, ClusterDirectory, DatabaseRepository, Provisioner, WorkspaceRepository } from '../ports.js';
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

/** How deletes are undone: a deleted database stays restorable this long (DATABASE_DELETE_RETENTION). */
export interface DeletionDeps {
  clock: Clock;
  deleteRetentionSeconds: number;
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
  if (!database) throw databaseNotFound(name);
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
 * Marks the database deleted: it disappears from the API and its name is free at once, and it is
 * restorable until the retention ends (a FAILED restore or branch, holding nothing, is purged at
 * once). Then closes its PostgreSQL database (new connections are
 * refused, open sessions end); should that be interrupted, the provisioner finishes it. Answers the
 * database as it is now (`deleted` set).
 */
export async function deleteDatabase(
  deps: DatabaseDeps & ProvisioningDeps & DeletionDeps,
  caller: Principal,
  workspaceSlug: string,
  name: string,
): Promise<Database> {
  const database = await getDatabase(deps, caller, workspaceSlug, name);
  const deleted = deps.clock.now();
  // A restore or branch that failed holds nothing worth keeping: it is purged at once.
  const purgeAfter = database.failure ? deleted : new Date(deleted.getTime() + deps.deleteRetentionSeconds * 1000);
  const marked = await deps.databases.markDeleted(database, { deleted, purgeAfter });
  // Another request deleted it since we found it.
  if (!marked) throw databaseNotFound(name);
  await deps.provisioner.settleNow(database.id);
  return marked;
}

/** A page of the workspace's deleted databases that can still be restored, oldest first. */
export async function listDeletedDatabases(
  deps: DatabaseDeps & DeletionDeps,
  caller: Principal,
  workspaceSlug: string,
  page: PageRequest = firstPage(),
): Promise<Page<Database>> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  return deps.databases.listDeletedPage(workspace, page, deps.clock.now());
}

/**
 * Brings a deleted database back within its retention, under its old name or `input.name`, with
 * its data, tenants, users and credentials; it is addressed by id, since its name may be taken
 * since (409 database_name_taken then). Reopening its PostgreSQL database follows at once, and is
 * finished by the provisioner should it be interrupted.
 */
export async function restoreDatabase(
  deps: DatabaseDeps & ProvisioningDeps & DeletionDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseId: string,
  input: { name?: string } = {},
): Promise<Database> {
  if (input.name !== undefined) assertDatabaseName(input.name);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  const restored = isUuid(databaseId) ? await deps.databases.restore(workspace, databaseId, { name: input.name, now: deps.clock.now() }) : null;
  if (!restored) throw deletedDatabaseNotFound(databaseId);
  await deps.provisioner.settleNow(restored.id);
  return restored;
}

/**
 * Drops a deleted database for good now, before its retention ends: from this moment it cannot be
 * restored, and its PostgreSQL database and its credentials' roles are dropped (now, or by the
 * provisioner should that be interrupted).
 */
export async function purgeDatabase(
  deps: DatabaseDeps & ProvisioningDeps & DeletionDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseId: string,
): Promise<Database> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  const purged = isUuid(databaseId) ? await deps.databases.endRetention(workspace, databaseId, deps.clock.now()) : null;
  if (!purged) throw deletedDatabaseNotFound(databaseId);
  await deps.provisioner.settleNow(purged.id);
  return purged;
}

export function databaseNotFound(name: string): NotFoundError {
  return new NotFoundError('database_not_found', `Database '${name}' not found`);
}

/** The same answer for an id that is unknown, of another workspace, live, purged or past its retention. */
function deletedDatabaseNotFound(id: string): NotFoundError {
  return new NotFoundError('database_not_found', `No deleted database with id '${id}' can be restored or purged in this workspace`);
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
