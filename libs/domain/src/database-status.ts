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
