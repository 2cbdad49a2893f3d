import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { nextProvisioningStatus, type Clock, type ProvisioningStore, type ProvisioningTask } from '@platform/domain';
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
      if (claimed.deleted) {
        await work({ kind: 'drop', database });
        claimed.dropped = this.clock.now();
      } else {
        const to = nextProvisioningStatus(claimed.status);
        if (!to) return;
        await work({ kind: 'advance', database, to });
        claimed.status = to;
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
              { deleted: null, status: { $in: ['REQUESTED', 'BUILT', 'POOLED'] } },
              { deleted: { $ne: null }, dropped: null },
            ],
          },
          // An explicit request (a DELETE waiting for its drop) does not wait out the retry backoff.
          databaseId ? {} : { $or: [{ nextAttemptAt: null }, { nextAttemptAt: { $lte: now } }] },
        ],
      },
      {
        // The loop skips rows another worker holds. An explicit request waits for it instead: a
        // DELETE whose drop the loop had just claimed would otherwise answer before the database
        // was gone. Once that worker commits, the row no longer matches and the claim finds nothing.
        lockMode: databaseId ? LockMode.PESSIMISTIC_WRITE : LockMode.PESSIMISTIC_PARTIAL_WRITE,
        orderBy: { created: 'asc' },
      },
    );
  }
}
