import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { CopyImpossibleError, nextProvisioningStatus, type Clock, type Database, type ProvisioningStore, type ProvisioningTask } from '@platform/domain';
import { DatabaseEntity, type DatabaseRow } from '../entities/database.entity.js';
import { WorkspaceEntity } from '../entities/workspace.entity.js';
import { toDatabase, toWorkspace } from './mappers.js';
import { claimWithBackoff, type BackoffOptions } from './claim-with-backoff.js';

/** The longest wait between two attempts at one database. */
const RETRY_CAP_MS = 60_000;

/**
 * Claims databases that need provisioning work with FOR UPDATE SKIP LOCKED, so several API
 * replicas can run provisioners against one control plane without doing the same work twice.
 */
export class MikroProvisioningStore implements ProvisioningStore {
  private readonly backoff: BackoffOptions;

  constructor(
    orm: MikroORM,
    private readonly clock: Clock,
  ) {
    this.backoff = { orm, clock, table: 'databases', retryCapMs: RETRY_CAP_MS };
  }

  async claim(work: (task: ProvisioningTask) => Promise<void>, options: { databaseId?: string } = {}): Promise<boolean> {
    return claimWithBackoff(this.backoff, async (tx, claimedId) => {
      const claimed = await this.lockNext(tx, options.databaseId);
      if (!claimed) return;
      claimedId(claimed.id);
      const workspace = toWorkspace(await tx.findOneOrFail(WorkspaceEntity, claimed.workspace.id));
      const database = toDatabase(claimed, workspace);
      const task = taskFor(claimed, database, this.clock.now());
      if (!task) return;
      if (task.kind === 'advance' && claimed.sourceDatabaseId) {
        // A restore or branch: its source is of the same workspace, and its row is never removed.
        task.source = toDatabase(await tx.findOneOrFail(DatabaseEntity, claimed.sourceDatabaseId), workspace);
      }
      try {
        await work(task);
      } catch (error) {
        if (!(error instanceof CopyImpossibleError) || task.kind !== 'advance') throw error;
        // Recorded with the claim, and never claimed again: FAILED until deleted.
        claimed.failure = error.message;
        claimed.lastError = error.message;
        claimed.attempts = 0;
        claimed.nextAttemptAt = null;
        return;
      }
      switch (task.kind) {
        case 'advance':
          claimed.status = task.to;
          // Built: its region's cluster holds its data from now (a restore of it reaches no further back).
          if (task.to === 'BUILT') claimed.servedSince = this.clock.now();
          break;
        case 'close':
          claimed.closed = this.clock.now();
          break;
        case 'reopen':
          claimed.closed = null;
          break;
        case 'drop':
          claimed.dropped = this.clock.now();
          break;
      }
      claimed.lastError = null;
      claimed.attempts = 0;
      claimed.nextAttemptAt = null;
    });
  }

  private async lockNext(tx: EntityManager, databaseId: string | undefined): Promise<DatabaseRow | null> {
    const now = this.clock.now();
    return tx.findOne(
      DatabaseEntity,
      {
        ...(databaseId ? { id: databaseId } : {}),
        $and: [
          {
            $or: [
              { deleted: null, failure: null, status: { $in: ['REQUESTED', 'BUILT', 'POOLED'] } },
              // Restored while closed: to be reopened.
              { deleted: null, closed: { $ne: null } },
              // Deleted: to be closed, and dropped once its retention has ended.
              { deleted: { $ne: null }, dropped: null, $or: [{ closed: null }, { purgeAfter: { $lte: now } }] },
            ],
          },
          // An explicit request (a DELETE, restore or purge waiting for its step) does not wait out the retry backoff.
          databaseId ? {} : { $or: [{ nextAttemptAt: null }, { nextAttemptAt: { $lte: now } }] },
        ],
      },
      {
        // The loop skips rows another worker holds. An explicit request waits for it instead: a
        // DELETE whose close the loop had just claimed would otherwise answer before the database
        // refused connections. Once that worker commits, the row no longer matches and the claim finds nothing.
        lockMode: databaseId ? LockMode.PESSIMISTIC_WRITE : LockMode.PESSIMISTIC_PARTIAL_WRITE,
        orderBy: { created: 'asc' },
      },
    );
  }
}

/**
 * The one step a claimed database takes next. A deleted one is dropped once its retention has
 * ended, and closed before that; a live one that is still closed (restored) is reopened before its
 * provisioning goes on. Null when it needs nothing (another worker did it meanwhile).
 */
function taskFor(row: DatabaseRow, database: Database, now: Date): ProvisioningTask | null {
  if (row.deleted) {
    if (row.dropped) return null;
    if (row.purgeAfter && row.purgeAfter.getTime() <= now.getTime()) return { kind: 'drop', database };
    return row.closed ? null : { kind: 'close', database };
  }
  if (row.closed) return { kind: 'reopen', database };
  const to = nextProvisioningStatus(row.status);
  return to ? { kind: 'advance', database, to } : null;
}
