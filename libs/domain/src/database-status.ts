/**
 * REQUESTED -> BUILT (database created, built-in schema installed) -> READY (verified).
 * PENDING waits for capacity before REQUESTED; POOLED marks a pre-built database taken from a
 * warm pool, which goes straight to READY. Neither is produced yet; both are part of the contract.
 */
export const DATABASE_STATUSES = ['PENDING', 'REQUESTED', 'BUILT', 'POOLED', 'READY'] as const;
export type DatabaseStatus = (typeof DATABASE_STATUSES)[number];

const NEXT: Record<DatabaseStatus, DatabaseStatus | null> = {
  PENDING: 'REQUESTED',
  REQUESTED: 'BUILT',
  BUILT: 'READY',
  POOLED: 'READY',
  READY: null,
};

/** The status a provisioner moves a database to next, or null when there is nothing to do. */
export function nextProvisioningStatus(status: DatabaseStatus): DatabaseStatus | null {
  return NEXT[status];
}

/**
 * What the API shows for a deleted database, whatever its provisioning status was: it refuses
 * connections and can be restored until its retention ends, then it is purged and shown no more.
 * The provisioning status stays underneath, so a restored database goes on from where it was.
 */
export const DELETED_STATUS = 'DELETED';

/**
 * What the API shows for a restore or branch that cannot be made (its instant is out of the
 * backups' reach now): it is not retried, holds no data, and stays so until deleted (`failure` says why).
 */
export const FAILED_STATUS = 'FAILED';

/** Every status the API shows: the provisioning statuses, DELETED and FAILED. */
export const SHOWN_DATABASE_STATUSES = [...DATABASE_STATUSES, DELETED_STATUS, FAILED_STATUS] as const;
export type ShownDatabaseStatus = (typeof SHOWN_DATABASE_STATUSES)[number];

export function shownDatabaseStatus(database: { status: DatabaseStatus; deleted: Date | null; failure?: string | null }): ShownDatabaseStatus {
  if (database.deleted) return DELETED_STATUS;
  return database.failure ? FAILED_STATUS : database.status;
}
