import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { CopyImpossibleError, type Database, type DatabaseCopier, type Region } from '@platform/domain';
import { assertPhysicalName, credentialRolesOf, databaseRoleNames, PINNED_SEARCH_PATH_OPTIONS, serviceRoleName } from '@platform/data-plane';
import { freePort, MANY_DATABASES_SETTINGS, openClusterBackups, OutsideRestoreWindowError, restoreToPointInTime, stopServerIn, type ClusterBackups } from '@platform/postgres-launcher';
import type { DatabaseMover } from './database-mover.js';
import { CLUSTER_CONNECT_TIMEOUT_MS } from './cluster-driver.js';
import { localDataDirectory } from './server-location.js';

export interface PointInTimeCopierOptions {
  /** A superuser URL of a served region's cluster. */
  clusterAdminUrl: (region: Region) => string;
  /** A superuser URL of a dedicated compute instance's server, when it is known here. */
  instanceAdminUrl?: (instanceId: string) => string | null;
  /** The pgBackRest program (BACKUP_PGBACKREST). */
  pgbackrest: string;
  /** Each copy's scratch cluster goes in `<scratchDir>/<target's physical name>` (a folder the server's account reaches). */
  scratchDir: string;
  mover: Pick<DatabaseMover, 'move'>;
  log: { info(details: object, message: string): void };
  /** Test-only: called at named steps; a test makes it kill the process to prove recovery. */
  faultPoint?: (step: string) => void;
}

/**
 * The scratch server's settings. hot_standby off: recovery then never compares its settings with
 * the source's (a compute instance's server may allow more connections than the launcher's
 * default), and the server takes connections only once promoted, with the instant reached.
 */
const SCRATCH_SETTINGS: Readonly<Record<string, string>> = { ...MANY_DATABASES_SETTINGS, hot_standby: 'off' };

/** The roles named after a database (its own four and its service role), in a fixed order. */
function ownRoles(physicalName: string): string[] {
  return [...Object.values(databaseRoleNames(physicalName)), serviceRoleName(physicalName)];
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CLUSTER_CONNECT_TIMEOUT_MS, options: PINNED_SEARCH_PATH_OPTIONS });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Turns the restored source database on the scratch server into the target, still on the scratch
 * server (its superuser; nothing of the customer's runs: renames, REASSIGN/DROP OWNED and a delete
 * from a platform table evaluate no customer code). The database and the roles named after it take
 * the target's name (ALTER ROLE ... RENAME keeps a SCRAM verifier; the service role's is set again
 * on the target anyway), and the source's credentials go: a copy starts with none, so a
 * credential of the source never logs in to it. What they owned goes to the owner role, as when a
 * credential is deleted.
 */
export async function renameRestoredDatabase(adminUrl: string, sourceName: string, targetName: string): Promise<void> {
  assertPhysicalName(sourceName);
  assertPhysicalName(targetName);
  await withClient(adminUrl, async (admin) => {
    await admin.query(`alter database ${sourceName} rename to ${targetName}`);
    const [from, to] = [ownRoles(sourceName), ownRoles(targetName)];
    for (const [index, name] of from.entries()) {
      const found = await admin.query(`select 1 from pg_catalog.pg_roles where rolname = $1`, [name]);
      if (found.rowCount) await admin.query(`alter role ${admin.escapeIdentifier(name)} rename to ${admin.escapeIdentifier(to[index])}`);
    }
  });
  await withClient(databaseUrl(adminUrl, targetName), async (database) => {
    const credentials = await credentialRolesOf(database, targetName);
    if (credentials.length > 0) {
      const listed = credentials.map((name) => database.escapeIdentifier(name)).join(', ');
      await database.query(`reassign owned by ${listed} to ${database.escapeIdentifier(databaseRoleNames(targetName).owner)}`);
      await database.query(`drop owned by ${listed}`);
      for (const name of credentials) await database.query(`drop role ${database.escapeIdentifier(name)}`);
    }
    // Scoped credentials' tenant bindings: no credential of the copy has one.
    await database.query(`delete from platform.credential_tenants`);
  });
}

/**
 * Restores and branches from the backups of the clusters configured on this machine (the
 * launcher's `pgbackrest.conf` beside a cluster's `data/`, found from the server's data_directory
 * as the backup scheduler finds it). A copy: (1) removes what an earlier attempt left, (2) restores
 * the source's cluster as of the instant on a scratch server (pgBackRest: the newest base backup
 * before it and its WAL up to it), (3) renames the database and its roles there to the target's
 * and drops the source's credentials (renameRestoredDatabase), (4) moves that database onto the
 * target's cluster with the DatabaseMover (pg_dump, then pg_restore of the customer's objects as a
 * login that is no superuser), (5) stops the scratch server and removes its folder. The source
 * cluster is only read: its WAL archived once more, so that the instant is in the archive.
 */
export class PointInTimeCopier implements DatabaseCopier {
  /** By server (a region's cluster, or an instance's server at its address): located once, as the backup scheduler does. */
  private readonly located = new Map<string, ClusterBackups | null>();

  constructor(private readonly options: PointInTimeCopierOptions) {}

  async restorableFrom(source: Database): Promise<{ from: Date | null } | null> {
    const backups = await this.backupsOf(source);
    if (!backups) return null;
    const window = await backups.restoreWindow();
    return { from: window.from };
  }

  async copy({ source, at, target }: { source: Database; at: Date; target: Database }): Promise<void> {
    if (source.servedSince && at < source.servedSince) {
      // It moved since the request: the backups of the server that holds it now know nothing of it then.
      throw new CopyImpossibleError(`database ${source.name} moved to another server at ${source.servedSince.toISOString()}, after ${at.toISOString()}: that instant cannot be restored from the backups of the server that holds it now`);
    }
    const backups = await this.backupsOf(source);
    if (!backups) throw new Error(`the backups of the server of database ${source.id} are not configured on this machine`);
    const dir = this.scratchFolder(target);
    await this.discard(target);
    const started = Date.now();
    const scratch = await restoreToPointInTime(backups, { at, dir, port: await freePort(), settings: SCRATCH_SETTINGS }).catch((error: unknown) => {
      // Its instant left the backups' reach since the request (expired, or behind a gap): for good.
      if (error instanceof OutsideRestoreWindowError) throw new CopyImpossibleError(`the backups of database ${source.name} no longer reach ${at.toISOString()}: ${error.message}`);
      throw error;
    });
    try {
      const restoredMs = Date.now() - started;
      this.options.faultPoint?.('after_scratch_restore');
      await renameRestoredDatabase(scratch.url('postgres'), source.physicalName, target.physicalName);
      await this.options.mover.move(target.physicalName, scratch.url('postgres'), this.options.clusterAdminUrl(target.region));
      this.options.log.info({ databaseId: target.id, sourceId: source.id, at, restoredMs, ms: Date.now() - started }, 'database copied from backups');
    } finally {
      await scratch.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  async discard(target: Database): Promise<void> {
    const dir = this.scratchFolder(target);
    if (!existsSync(dir)) return;
    // A run killed mid-copy: the watchdog stops its server soon after, or this does.
    await stopServerIn(dir);
    rmSync(dir, { recursive: true, force: true });
  }

  private scratchFolder(target: Database): string {
    assertPhysicalName(target.physicalName);
    return join(this.options.scratchDir, target.physicalName);
  }

  /** The backups of the server that holds the source now: its instance's server, or its region's cluster. */
  private async backupsOf(source: Database): Promise<ClusterBackups | null> {
    const onInstance = Boolean(source.server && source.instanceId);
    const url = onInstance ? (this.options.instanceAdminUrl?.(source.instanceId!) ?? null) : this.options.clusterAdminUrl(source.region);
    if (url === null) return null;
    // An instance's address may later be another instance's: its id is part of the key.
    const key = onInstance ? `${source.instanceId} ${url}` : url;
    if (this.located.has(key)) return this.located.get(key) ?? null;
    const dataDir = await localDataDirectory(url, CLUSTER_CONNECT_TIMEOUT_MS);
    const backups = dataDir === null ? null : openClusterBackups(dirname(dataDir), { pgbackrest: this.options.pgbackrest, url });
    this.located.set(key, backups);
    return backups;
  }
}
