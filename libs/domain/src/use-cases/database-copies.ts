import { randomUUID } from 'node:crypto';
import { assertDatabaseName } from '../database-name.js';
import { ConflictError, ValidationError } from '../errors.js';
import { isUuid } from '../uuid.js';
import type { Database, Principal } from '../model.js';
import type { Clock, DatabaseCopier } from '../ports.js';
import type { Region } from '../regions.js';
import { databaseNotFound, type DatabaseDeps, type ProvisioningDeps } from './databases.js';
import { getWorkspace } from './workspaces.js';

/** Restores and branches: the backups they are made from, and the clock that says what "now" is. */
export interface CopyDeps {
  copier: DatabaseCopier;
  clock: Clock;
}

export interface CopyRequest {
  name: string;
  /** The new database's region; the source's when absent. */
  region?: Region;
  from: {
    /** The source: a live database of the workspace, by name or by id. */
    database: string;
    /** The instant whose data the new database holds; absent: now (a branch). */
    at?: Date;
  };
}

/**
 * A new database holding another one's data as it was at an instant (a point-in-time restore), or
 * as it is now (a branch), taken from the source cluster's backups: the source is never paused or
 * touched. Checks the instant against what the backups reach and persists the database in
 * REQUESTED with its source; the provisioner restores the instant on a scratch server and moves
 * the database out of it (BUILT), then verifies it (READY). A copy carries the source's schema,
 * data, tenants and users, and none of its credentials.
 */
export async function copyDatabase(deps: DatabaseDeps & ProvisioningDeps & CopyDeps, caller: Principal, workspaceSlug: string, input: CopyRequest): Promise<Database> {
  assertDatabaseName(input.name);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  const ref = input.from.database;
  const source = (await deps.databases.findLiveByName(workspace, ref)) ?? (isUuid(ref) ? await deps.databases.findLiveById(workspace, ref) : null);
  if (!source) throw databaseNotFound(ref);
  const region = input.region ?? source.region;
  if (!deps.clusters.regions().includes(region)) {
    throw new ValidationError('region_not_served', `Region ${region} is not served by this platform; served: ${deps.clusters.regions().join(', ')}`);
  }
  if (source.status !== 'READY') {
    throw new ConflictError('database_not_ready', `Database '${source.name}' is ${source.status}: only a READY database can be restored or branched`);
  }
  if (source.moving) {
    throw new ConflictError('database_not_ready', `Database '${source.name}' is moving between servers: restore or branch it once the move is done`);
  }
  const now = deps.clock.now();
  const at = input.from.at ?? now;
  const reach = await deps.copier.restorableFrom(source);
  if (!reach) {
    const server = source.server ? 'dedicated compute instance' : 'cluster';
    throw new ConflictError(
      'backups_not_configured',
      `The backups of the ${server} that serves database '${source.name}' are not configured on this platform: it cannot be restored to a point in time or branched`,
    );
  }
  // The server's backups reach back to their oldest backup, and for this database only to when the
  // server began to hold it (a database that moved holds nothing on its new server before).
  const from = reach.from && source.servedSince && source.servedSince > reach.from ? source.servedSince : reach.from;
  if (!from || at < from || at > now) {
    const window = from ? `from ${from.toISOString()} to now (${now.toISOString()})` : 'no instant yet (no base backup has been taken since WAL archiving started)';
    throw new ValidationError('restore_point_outside_window', `from.at: ${at.toISOString()} cannot be restored; database '${source.name}' can be restored ${window}`);
  }
  const database = await deps.databases.create({ id: randomUUID(), workspace, name: input.name, region, source: { databaseId: source.id, at } });
  deps.provisioner.nudge();
  return database;
}
