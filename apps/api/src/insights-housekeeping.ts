import type { Logger } from 'pino';
import type { InsightsRetention } from '@platform/domain';
import type { SqlInsightsRetention } from '@platform/persistence';

/**
 * Rolls insight figures up past their retention (SqlInsightsRetention) every `everyMs`, in the one
 * replica that leads; the first run is at start, so a platform that was down catches up at once.
 */
export function startInsightsHousekeeping(options: {
  retention: SqlInsightsRetention;
  keep: InsightsRetention;
  isLeader: () => Promise<boolean>;
  everyMs: number;
  log: Logger;
}): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      try {
        if (await options.isLeader()) await options.retention.rollUp(new Date(), options.keep);
      } catch (error) {
        options.log.warn({ err: error }, 'could not roll insight figures up; trying again later');
      }
    });
  };
  run();
  const timer = setInterval(run, options.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
