import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (getconf CLK_TCK; 100 on Linux unless built otherwise). */
function clockTicks(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

let ticksPerSecond: number | undefined;

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * The CPU time (user and system, in ms) a process has used, or null when it is gone (or this is
 * no Linux). Precise to a clock tick (10 ms at 100 ticks per second).
 */
export function processCpuMs(pid: number): number | null {
  const fields = statFields(pid);
  if (!fields) return null;
  // After the name: state(3) ppid(4) ... utime(14) stime(15), counted from 1 over the whole line.
  const ticks = Number(fields[11]) + Number(fields[12]);
  ticksPerSecond ??= clockTicks();
  return Number.isFinite(ticks) ? (ticks * 1000) / ticksPerSecond : null;
}

/**
 * Whether a PostgreSQL backend's process id is a process of this machine: a `postgres` process
 * whose parent (the postmaster) is `postgres` too. A cluster elsewhere has ids that mean nothing here.
 */
export function isLocalPostgres(backendPid: number): boolean {
  const fields = statFields(backendPid);
  if (!fields || commandOf(backendPid) !== 'postgres') return false;
  return commandOf(Number(fields[1])) === 'postgres';
}
