// pgbench for the gateway benchmark (gateway.ts): running it against one target, reading what it
// printed and its per-transaction log, and the CPU time the processes around it spent meanwhile.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { percentile, track } from './support.js';

/** Debian's postgresql-15 package: pgbench 15 speaks to the 18 server. */
export const PGBENCH = '/usr/lib/postgresql/15/bin/pgbench';

/** Where a pgbench connects: a host, a port, a role, its password, a database name, and TLS or not. */
export interface Target {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  tls: boolean;
}

export interface Workload {
  name: string;
  /** pgbench's builtin script. */
  script: 'select-only' | 'tpcb-like';
  /** Statements a transaction sends (BEGIN and END count): to turn added latency per transaction into per statement. */
  statements: number;
}

export const WORKLOADS: Workload[] = [
  { name: 'select-only', script: 'select-only', statements: 1 },
  { name: 'TPC-B-like', script: 'tpcb-like', statements: 7 },
];

export interface PgbenchRun {
  transactions: number;
  failed: number;
  /** pgbench's own figure, without the initial connection time. */
  tps: number;
  /** From the per-transaction log, in milliseconds. */
  averageMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Seconds of the run, from spawn to exit. */
  wallSeconds: number;
  /** When each logged transaction ended (epoch milliseconds), in log order; empty without a log. */
  endedAtMs: number[];
}

/** The environment of a libpq program: nothing of this process's PG* settings, the target's password and TLS mode. */
function libpqEnv(target: Target): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, PGPASSWORD: target.password, PGSSLMODE: target.tls ? 'require' : 'disable', PGCONNECT_TIMEOUT: '10' };
}

function connectionArgs(target: Target): string[] {
  return ['-h', target.host, '-p', String(target.port), '-U', target.user];
}

/** Runs pgbench (`program`) to its end (killed after `limitSeconds`); answers its output, or throws with it. */
async function pgbench(target: Target, args: string[], limitSeconds: number, program = PGBENCH): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(program, [...connectionArgs(target), ...args, target.database], { env: libpqEnv(target), stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), limitSeconds * 1000);
  const status = await new Promise<number | string>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(signal ?? code ?? 'unknown'));
  }).finally(() => clearTimeout(killer));
  if (status !== 0) throw new Error(`pgbench ${args.join(' ')} ended with ${status}:\n${stderr.trim()}\n${stdout.trim()}`);
  return { stdout, stderr };
}

/** pgbench -i: the four tables at `scale`, created by `target`'s role (with `program`, another pgbench than Debian 12's). */
export async function initialisePgbench(target: Target, scale: number, program?: string): Promise<void> {
  await pgbench(target, ['-i', '-q', '-s', String(scale)], 600, program);
}

/**
 * One timed run: `clients` connections over 2 threads for `seconds`, every transaction logged
 * under `logPrefix` (files `<prefix>.<pid>` and `<prefix>.<pid>.<thread>`), which gives exact percentiles.
 */
export async function runPgbench(
  target: Target,
  run: { workload: Workload; clients: number; seconds: number; protocol: string; logPrefix?: string; program?: string; limitSeconds?: number },
): Promise<PgbenchRun> {
  const args = ['-b', run.workload.script, '-c', String(run.clients), '-j', '2', '-T', String(run.seconds), '-M', run.protocol];
  if (run.logPrefix) args.push('--log', `--log-prefix=${run.logPrefix}`);
  const started = performance.now();
  const { stdout } = await pgbench(target, args, run.limitSeconds ?? run.seconds + 120, run.program);
  const wallSeconds = (performance.now() - started) / 1000;
  const number = (pattern: RegExp, what: string) => {
    const match = pattern.exec(stdout);
    if (!match) throw new Error(`pgbench printed no ${what}:\n${stdout}`);
    return Number(match[1]);
  };
  const transactions = number(/number of transactions actually processed: (\d+)/, 'transaction count');
  const failed = /number of failed transactions: (\d+)/.exec(stdout);
  const tps = number(/tps = ([\d.]+) \(without initial connection time\)/, 'tps');
  const { latencies, endedAtMs } = run.logPrefix ? readLog(run.logPrefix) : { latencies: [], endedAtMs: [] };
  if (run.logPrefix && latencies.length !== transactions) {
    throw new Error(`pgbench logged ${latencies.length} transactions and reported ${transactions}`);
  }
  const sorted = latencies.sort((a, b) => a - b);
  let sum = 0;
  for (const value of sorted) sum += value;
  return {
    transactions,
    failed: failed ? Number(failed[1]) : 0,
    tps,
    averageMs: sorted.length ? sum / sorted.length / 1000 : NaN,
    p50Ms: sorted.length ? percentile(sorted, 50) / 1000 : NaN,
    p99Ms: sorted.length ? percentile(sorted, 99) / 1000 : NaN,
    wallSeconds,
    endedAtMs,
  };
}

/**
 * The latencies (microseconds) and end times of a run's log, whose files are removed: each line is
 * `client_id transaction_no time script_no time_epoch time_us`, `time` the latency, `time_epoch` and
 * `time_us` when the transaction ended; failed ones say so instead of a latency.
 */
function readLog(logPrefix: string): { latencies: number[]; endedAtMs: number[] } {
  const slash = logPrefix.lastIndexOf('/');
  const dir = logPrefix.slice(0, slash);
  const base = logPrefix.slice(slash + 1);
  const latencies: number[] = [];
  const endedAtMs: number[] = [];
  for (const file of readdirSync(dir).filter((name) => name.startsWith(`${base}.`))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line) continue;
      const fields = line.split(' ', 6);
      const latency = Number(fields[2]);
      if (!Number.isFinite(latency)) continue;
      latencies.push(latency);
      endedAtMs.push(Number(fields[4]) * 1000 + Number(fields[5]) / 1000);
    }
    // Some 15 MB a run at 25,000 transactions a second: read once, then gone.
    rmSync(join(dir, file));
  }
  return { latencies, endedAtMs };
}

/**
 * CPU time a process and every live process below it (a gateway's workers) have used, in user and in
 * system mode, in milliseconds; null once it is gone or where there is no /proc.
 */
export function processCpuMs(pid: number | undefined): { user: number; system: number } | null {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return null;
  const stats = new Map<number, { parent: number; user: number; system: number }>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): ppid is the 2nd, utime and stime the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      stats.set(Number(entry), { parent: Number(fields[1]), user: Number(fields[11]), system: Number(fields[12]) });
    } catch {
      // Gone meanwhile.
    }
  }
  let user = 0;
  let system = 0;
  const below = [pid];
  while (below.length > 0) {
    const next = below.pop()!;
    user += stats.get(next)?.user ?? 0;
    system += stats.get(next)?.system ?? 0;
    for (const [child, stat] of stats) if (stat.parent === next) below.push(child);
  }
  return { user: (user * 1000) / CLOCK_TICKS, system: (system * 1000) / CLOCK_TICKS };
}

/** Linux's USER_HZ, what /proc counts CPU time in. */
const CLOCK_TICKS = 100;

/** The machine's CPU time so far, busy and in all, in milliseconds (from /proc/stat); null without /proc. */
export function machineCpuMs(): { busy: number; total: number } | null {
  if (!existsSync('/proc/stat')) return null;
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const ticks = line.split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  // idle and iowait are the 4th and 5th.
  const busy = total - ticks[3] - ticks[4];
  return { busy: (busy * 1000) / CLOCK_TICKS, total: (total * 1000) / CLOCK_TICKS };
}

/** user, system, children's user and children's system time of a process, in milliseconds; 0 once it is gone. */
function processTreeTimesMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/**
 * CPU time of this process's children that have ended (pgbench runs, once reaped), in milliseconds;
 * null without /proc.
 */
export function endedChildrenCpuMs(): number | null {
  if (!existsSync('/proc/self/stat')) return null;
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

/** The postmaster listening on `port` (its command line holds `-p <port>`); null when not found or without /proc. */
export function postmasterOf(port: number): number | null {
  if (!existsSync('/proc')) return null;
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = args.indexOf('-p');
      if (args[0].endsWith('/postgres') && at > 0 && args[at + 1] === String(port)) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return null;
}

/**
 * CPU time of a PostgreSQL server so far, in milliseconds: the postmaster with its ended children
 * (backends of closed sessions) and its live children (background processes, open sessions).
 */
export function postgresCpuMs(postmaster: number): number {
  let total = processTreeTimesMs(postmaster);
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[1]) === postmaster) total += processTreeTimesMs(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}
