import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

// Blocks on a pipe only this process writes to. The pipe ends when this process ends, however it
// ends (SIGKILL included), and the watchdog then stops the server: a fast shutdown, then after
// 5 s an immediate one, then after 10 s SIGKILL.
const SCRIPT = `
while read -r _; do :; done
kill -INT "$1" 2>/dev/null || exit 0
n=0
while kill -0 "$1" 2>/dev/null && [ "$n" -lt 100 ]; do
  n=$((n + 1))
  [ "$n" -eq 50 ] && kill -QUIT "$1" 2>/dev/null
  sleep 0.1
done
kill -KILL "$1" 2>/dev/null
exit 0
`;

/**
 * Starts a small process that stops `pid` when this process is gone. It sits in its own process
 * group, so a terminal's Ctrl-C leaves it to do its work, and it does not keep this process alive.
 */
export function watchOver(pid: number): ChildProcess {
  const watchdog = spawn('/bin/sh', ['-c', SCRIPT, 'postgres-watchdog', String(pid)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.on('error', () => {});
  watchdog.unref();
  (watchdog.stdin as unknown as Socket).unref();
  return watchdog;
}
