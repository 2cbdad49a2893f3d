// Measuring helpers of bench:scale (scale.ts): load, the API's sessions on the cluster, the machine.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import type pg from 'pg';
import { sleep } from './support.js';

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** A path and the token to read it with. */
export interface Read {
  path: string;
  token: string;
}

/** autocannon on `url` with `token`, or round-robin over `reads` (each with its own token). */
export async function load(url: string, token: string, connections: number, seconds: number, reads?: Read[]): Promise<Result> {
  let next = 0;
  return autocannon({
    url,
    connections,
    duration: seconds,
    timeout: 30,
    headers: { authorization: `Bearer ${token}` },
    ...(reads
      ? {
          requests: [
            {
              setupRequest: (request) => {
                const read = reads[next++ % reads.length];
                return { ...request, path: read.path, headers: { ...request.headers, authorization: `Bearer ${read.token}` } };
              },
            },
          ],
        }
      : {}),
  });
}

export function describe(result: Result): string {
  return (
    `${result.requests.average.toFixed(0).padStart(6)} req/s  p50 ${String(result.latency.p50).padStart(4)} ms  p99 ${String(result.latency.p99).padStart(4)} ms` +
    `  ok ${result['2xx']}  non-2xx ${result.non2xx}  errors ${result.errors}  timeouts ${result.timeouts}`
  );
}

/** Sessions the API holds on the cluster (every database's service role), sampled until `stop` is called; answers the most seen. */
export function watchSessions(admin: pg.Client): { stop(): Promise<number> } {
  let most = 0;
  let running = true;
  const sampling = (async () => {
    while (running) {
      const { rows } = await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where usename like '%\\_service'`);
      most = Math.max(most, rows[0].n);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await sampling;
      return most;
    },
  };
}

/**
 * Sessions ever opened to platform databases (pg_stat_database, PostgreSQL 14+). A backend reports
 * its session within PGSTAT_IDLE_INTERVAL (10 s) or at exit: read it that long after a run.
 */
export async function sessionsOpened(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(`select coalesce(sum(sessions), 0)::bigint as n from pg_stat_database where datname like 'db\\_%'`);
  return Number(rows[0].n);
}
export const STATS_SETTLE_MS = 11_500;

/**
 * 4 clients paging through the tenants at `tenantsPath`, in a process of their own (pagers.ts), for `seconds`
 * after their first page is in; `paging` resolves then, `pages` with the pages they read.
 */
export async function runPagers(apiUrl: string, token: string, tenantsPath: string, seconds: number): Promise<{ paging: Promise<void>; pages: Promise<number> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./pagers.ts', import.meta.url))], {
    env: { ...process.env, API_URL: apiUrl, TOKEN: token, TENANTS_PATH: tenantsPath, CLIENTS: '4', SECONDS: String(seconds + 2) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  let started: () => void;
  const paging = new Promise<void>((resolve) => (started = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk;
    if (output.startsWith('paging\n')) started();
  });
  const pages = once(child, 'exit').then(([code]) => {
    if (code !== 0) throw new Error(`the pagers exited with ${code}`);
    return JSON.parse(output.split('\n')[1]).pages as number;
  });
  // Never stuck waiting: an early exit rejects `pages`, and `paging` with it.
  return { paging: Promise.race([paging, pages.then(() => undefined)]), pages };
}

/** Reads each database once, 8 at a time, so that its connection is open before a run measures; answers the seconds it took. */
export async function readEachOnce(apiUrl: string, reads: Read[]): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < reads.length; i = next++) {
        const response = await fetch(`${apiUrl}${reads[i].path}`, { headers: { authorization: `Bearer ${reads[i].token}` } });
        if (response.status !== 200) throw new Error(`first read of ${reads[i].path}: ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

/** The share of the machine's CPU time (all cores) spent busy over `ms`, from /proc/stat. */
export async function machineBusy(ms: number): Promise<number> {
  const read = () => {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
    const idle = ticks[3] + ticks[4];
    return { idle, total: ticks.reduce((a, b) => a + b, 0) };
  };
  const before = read();
  await sleep(ms);
  const after = read();
  return 1 - (after.idle - before.idle) / (after.total - before.total);
}

export function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}
