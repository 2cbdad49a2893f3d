import type { InsightsRetention } from '@platform/domain';
import { PeriodicWork } from '@platform/process';
import type { SqlGrantStore } from './grant.store.js';
import type { SqlInsightsRetention } from './insights-retention.js';

interface HousekeepingLog {
  debug(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/**
 * Rolls insight figures up past their retention every `everyMs`, in the one replica that leads;
 * the first roll-up is at start, so a platform that was down catches up at once. Not started.
 */
export function insightsHousekeeping(options: {
  retention: SqlInsightsRetention;
  keep: InsightsRetention;
  isLeader: () => Promise<boolean>;
  everyMs: number;
  log: HousekeepingLog;
}): PeriodicWork {
  return new PeriodicWork(
    async () => {
      if (await options.isLeader()) await options.retention.rollUp(new Date(), options.keep);
    },
    { intervalMs: options.everyMs, onError: (error) => options.log.warn({ err: error }, 'could not roll insight figures up; trying again later') },
  );
}

/**
 * Deletes expired codes and dead token families every `everyMs` (in each replica: the deletes are
 * idempotent); the first purge is one interval after start. Not started.
 */
export function grantPurge(grants: SqlGrantStore, options: { everyMs: number; now: () => Date; log: HousekeepingLog }): PeriodicWork {
  return new PeriodicWork(async () => options.log.debug(await grants.purge(options.now()), 'purged expired grants'), {
    intervalMs: options.everyMs,
    firstPass: 'after-interval',
    onError: (error) => options.log.warn({ err: error }, 'purging expired grants failed'),
  });
}
