import { randomUUID } from 'node:crypto';
import { requireManagement } from '../authorization.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { shownDatabaseStatus } from '../database-status.js';
import type { Database, Principal } from '../model.js';
import type { DatabasePath } from '../paths.js';
import { getDatabase, type DatabaseDeps } from '../use-cases/databases.js';
import { getWorkspace } from '../use-cases/workspaces.js';
import { INSTANCE_NAME_MAX_LENGTH, type ComputeInstance, type ComputeInstanceRepository, type ComputeProvisioner, type InstanceWindow } from './compute-instances.js';
import { resolveComputeType, type ComputeType } from './compute-types.js';

export interface ComputeDeps extends DatabaseDeps {
  computeInstances: ComputeInstanceRepository;
  /** The compute types every workspace may use; empty when the platform runs no dedicated compute. */
  computeCatalog: readonly ComputeType[];
  computeProvisioner: ComputeProvisioner;
}

/** An instance with the database it serves. */
export interface DatabaseInstance {
  database: Database;
  instance: ComputeInstance;
}

/*
 * Dedicated compute is for the people who run the database (developers and their workspaces'
 * clients): a user token is refused with 403 whatever it addresses.
 */

/** Whether a database can take dedicated compute now: what `expandable` says. */
export function canExpand(database: Database, catalog: readonly ComputeType[]): boolean {
  return catalog.length > 0 && database.status === 'READY' && !database.instanceId;
}

export async function listComputeTypes(deps: ComputeDeps, caller: Principal, workspaceSlug: string): Promise<readonly ComputeType[]> {
  await getWorkspace(deps, requireManagement(caller), workspaceSlug);
  return deps.computeCatalog;
}

const INSTANCE_NAME = /^[\p{L}\p{N}][\p{L}\p{N} _.-]*$/u;

function assertInstanceName(name: string): void {
  if (name.length === 0 || name.length > INSTANCE_NAME_MAX_LENGTH || !INSTANCE_NAME.test(name)) {
    throw new ValidationError(
      'invalid_instance_name',
      `An instance name is 1 to ${INSTANCE_NAME_MAX_LENGTH} letters, digits, spaces, '_', '.' or '-', starting with a letter or digit`,
    );
  }
}

function instanceNotFound(id: string): NotFoundError {
  return new NotFoundError('compute_instance_not_found', `Compute instance '${id}' not found`);
}

/** Persists a PENDING instance; the reconciler starts its server and moves the database onto it. */
export async function createComputeInstance(
  deps: ComputeDeps,
  caller: Principal,
  path: DatabasePath,
  input: { instanceName: string; instanceSize: string },
): Promise<DatabaseInstance> {
  assertInstanceName(input.instanceName);
  const database = await getDatabase(deps, requireManagement(caller), path.workspaceSlug, path.databaseName);
  if (deps.computeCatalog.length === 0) {
    throw new ConflictError('compute_not_available', 'This platform runs no dedicated compute (its compute catalog is empty)');
  }
  const type = resolveComputeType(deps.computeCatalog, input.instanceSize);
  if (database.status !== 'READY') {
    throw new ConflictError('database_not_ready', `Database '${database.name}' is ${shownDatabaseStatus(database)}, not READY yet`);
  }
  const instance = await deps.computeInstances.create({ id: randomUUID(), databaseId: database.id, name: input.instanceName, type });
  deps.computeProvisioner.nudge();
  return { database, instance };
}

/** Instances alive at some point of the window; 400 when it ends before it starts. */
export async function listComputeInstances(
  deps: ComputeDeps,
  caller: Principal,
  path: DatabasePath,
  window: InstanceWindow,
): Promise<{ database: Database; instances: ComputeInstance[] }> {
  if (window.start && window.end && window.start.getTime() > window.end.getTime()) {
    throw new ValidationError('invalid_window', '`start` is after `end`');
  }
  const database = await getDatabase(deps, requireManagement(caller), path.workspaceSlug, path.databaseName);
  return { database, instances: await deps.computeInstances.listForDatabase(database.id, window) };
}

export async function getComputeInstance(deps: ComputeDeps, caller: Principal, path: DatabasePath, id: string): Promise<DatabaseInstance> {
  const database = await getDatabase(deps, requireManagement(caller), path.workspaceSlug, path.databaseName);
  const instance = await deps.computeInstances.find(database.id, id);
  if (!instance) throw instanceNotFound(id);
  return { database, instance };
}

/**
 * Renames and/or resizes. A new size sets desiredInstanceType; the reconciler restarts the server
 * with it (READY -> RESIZING -> READY). 409 for an instance being deleted or gone, and for a
 * resize of a FAILED one (delete it and create another).
 */
export async function updateComputeInstance(
  deps: ComputeDeps,
  caller: Principal,
  path: DatabasePath,
  id: string,
  input: { instanceName?: string; instanceSize?: string },
): Promise<DatabaseInstance> {
  if (input.instanceName !== undefined) assertInstanceName(input.instanceName);
  const { database, instance } = await getComputeInstance(deps, caller, path, id);
  const desiredType = input.instanceSize === undefined ? undefined : resolveComputeType(deps.computeCatalog, input.instanceSize);
  const notChangeable = () =>
    new ConflictError('compute_instance_not_changeable', `Compute instance '${id}' is ${instance.status}: it can no longer be changed`);
  if (instance.status === 'DELETING' || instance.status === 'TERMINATED') throw notChangeable();
  if (instance.status === 'FAILED' && desiredType && desiredType.id !== instance.desiredInstanceType.id) throw notChangeable();
  const updated = await deps.computeInstances.update(database.id, id, { name: input.instanceName, desiredType });
  if (!updated) throw notChangeable();
  if (desiredType) deps.computeProvisioner.nudge();
  return { database, instance: updated };
}

/**
 * Starts deleting: the reconciler moves the database back to its region's cluster with its data,
 * then stops the server and removes its files (DELETING -> TERMINATED). Deleting an instance that
 * is already DELETING or TERMINATED answers it as it is.
 */
export async function deleteComputeInstance(deps: ComputeDeps, caller: Principal, path: DatabasePath, id: string): Promise<DatabaseInstance> {
  const { database } = await getComputeInstance(deps, caller, path, id);
  const instance = await deps.computeInstances.markDeleting(database.id, id);
  if (!instance) throw instanceNotFound(id);
  deps.computeProvisioner.nudge();
  return { database, instance };
}
