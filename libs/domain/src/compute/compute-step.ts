import type { ComputeInstanceStatus, ComputeTask } from './compute-instances.js';

/** Failed attempts at provisioning or a resize after which the instance gives up (FAILED). */
export const COMPUTE_MAX_ATTEMPTS = 3;

/** Whether a failure of a step that can give up is retried or ends the instance as FAILED. */
export type OnFailure = 'retry' | 'give-up';

/**
 * The one step a claimed instance takes next; the reconciler carries it out and commits its
 * outcome. Steps that change a status alone (`advance`) are committed before the work they name,
 * so a crash during that work is followed by the same work again.
 */
export type ComputeStep =
  /** Commit a status before its work: PENDING -> PROVISIONING, READY -> RESIZING. */
  | { kind: 'advance'; to: ComputeInstanceStatus }
  /** Start the server and move the database onto it (PROVISIONING -> READY). */
  | { kind: 'move-in'; onFailure: OnFailure }
  /** Restart the server with the desired type (RESIZING -> READY). */
  | { kind: 'resize'; onFailure: OnFailure }
  /** Move the database back to its region's cluster; removing the server is the next step. */
  | { kind: 'move-back' }
  /**
   * Stop the server and remove its files (-> TERMINATED). `databaseLives`: the database stays, on
   * its region's cluster, whose copy a move that never finished may have left paused.
   */
  | { kind: 'remove'; databaseLives: boolean }
  /** Drop the copy a finished move left behind, now that no replica can still route to it. */
  | { kind: 'drop-old-copy' }
  | { kind: 'nothing' };

/**
 * What follows for an instance, from where it stands and the time. Deleting comes first (a purged
 * database takes its instance with it); then the drop of an old copy whose grace has passed; then
 * the status's own step.
 */
export function nextComputeStep(task: ComputeTask, now: Date, maxAttempts = COMPUTE_MAX_ATTEMPTS): ComputeStep {
  const { instance, database } = task;
  if (database.purged || instance.status === 'DELETING') {
    if (!database.purged && database.server) return { kind: 'move-back' };
    return { kind: 'remove', databaseLives: !database.purged };
  }
  if (task.pendingDrop && task.dropAfter && task.dropAfter.getTime() <= now.getTime()) return { kind: 'drop-old-copy' };
  // This attempt is the last when it would be the maxAttempts-th failure in a row.
  const onFailure: OnFailure = task.attempts + 1 < maxAttempts ? 'retry' : 'give-up';
  switch (instance.status) {
    case 'PENDING':
      return { kind: 'advance', to: 'PROVISIONING' };
    case 'PROVISIONING':
      return { kind: 'move-in', onFailure };
    case 'READY':
      return instance.desiredInstanceType.id === instance.instanceType.id ? { kind: 'nothing' } : { kind: 'advance', to: 'RESIZING' };
    case 'RESIZING':
      return { kind: 'resize', onFailure };
    default:
      return { kind: 'nothing' };
  }
}
