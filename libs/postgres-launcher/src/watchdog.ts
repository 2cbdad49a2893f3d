import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * How the server is stopped, by `stop()` and by the watchdog alike: a fast shutdown (sessions are
 * ended), an immediate one after IMMEDIATE_AFTER_MS, SIGKILL after KILL_AFTER_MS. `npm start`
 * gives its apps 5 s to drain first, and the whole stop must end within 10 s.
 */
export const STOP_POLICY = { immediateAfterMs: 2_000, killAfterMs: 4_000 } as const;

const TICK_MS = 100;

// Blocks on a pipe only this process writes to. The pipe ends when this process ends, however it
// ends (SIGKILL included), and the watchdog then stops its target as STOP_POLICY says. The target
// is a process id, or a process group's (negative): `kill --` takes both.
const SCRIPT = `
while read -r _; do :; done
kill -s INT -- "$1" 2>/dev/null || exit 0
n=0
while kill -s 0 -- "$1" 2>/dev/null && [ "$n" -lt ${STOP_POLICY.killAfterMs / TICK_MS} ]; do
  n=$((n + 1))
  [ "$n" -eq ${STOP_POLICY.immediateAfterMs / TICK_MS} ] && kill -s QUIT -- "$1" 2>/dev/null
  sleep ${TICK_MS / 1000}
done
kill -s KILL -- "$1" 2>/dev/null
exit 0
`;

/**
 * Starts a small process that stops `pid` when this process is gone; with `group`, the whole
 * process group `pid` leads (initdb and the servers it runs to bootstrap a cluster). It sits in its
 * own process group, so a terminal's Ctrl-C leaves it to do its work, and it does not keep this
 * process alive.
 */
export function watchOver(pid: number, options: { group?: boolean } = {}): ChildProcess {
  const target = options.group ? -pid : pid;
  const watchdog = spawn('/bin/sh', ['-c', SCRIPT, 'postgres-watchdog', String(target)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.on('error', () => {});
  watchdog.unref();
  (watchdog.stdin as unknown as Socket).unref();
  return watchdog;
}
