import type { Logger } from 'pino';

/** PLATFORM_FAULT_POINT=<step>: the process kills itself at that provisioning step (tests of recovery). */
export function faultInjector(point: string, logger: Logger): (step: string) => void {
  return (step) => {
    if (step !== point) return;
    logger.warn({ step }, 'fault point reached: killing the process');
    process.kill(process.pid, 'SIGKILL');
  };
}
