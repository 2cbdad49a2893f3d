// The gateway benchmark's peers (gateway.ts). PgBouncer, the reference pooler: session pooling, no
// TLS, one database entry and one user, in a folder of its own that the `postgres` account can read
// (PgBouncer refuses to run as root; started as root it switches to that account with -u). And the
// bare Node relay (node-relay.ts), the floor under any proxy written for Node.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@platform/testing';
import { sleep, track } from './support.js';

/** The copy tools/pgbouncer.mjs unpacks (1.21 or later), else the system's package (Debian 12's is 1.18). */
const FETCHED = resolve(import.meta.dirname, '../../.data/pgbouncer/bin/pgbouncer');
export const PGBOUNCER = existsSync(FETCHED) ? FETCHED : '/usr/sbin/pgbouncer';
const ACCOUNT = 'postgres';

export interface RunningPgbouncer {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** A userlist line: both fields double-quoted, a quote inside doubled. */
function quoted(value: string): string {
  return `"${value.replaceAll('"', '""')}"`;
}

/**
 * Starts PgBouncer on a free loopback port with `name` leading to `server`'s `database`, and
 * `user` authenticated by SCRAM against the password kept in plain text in its auth file (a
 * benchmark's throwaway credential): PgBouncer needs it in plain text to log in to the server
 * with SCRAM itself. Server connections idle for `serverIdleSeconds` are closed, so that the
 * credential's connection limit is free again for the next target soon after a run.
 */
export async function startPgbouncer(settings: {
  name: string;
  server: { host: string; port: number; database: string };
  user: string;
  password: string;
  poolSize: number;
  serverIdleSeconds: number;
  /** Another pgbouncer than Debian 12's (tools/pgbouncer.mjs puts a 1.21+ one in .data/pgbouncer). */
  program?: string;
  /** Default session. */
  poolMode?: 'session' | 'transaction';
  /** Default twice the pool size. */
  maxClientConn?: number;
  /** More settings of the [pgbouncer] section, e.g. max_prepared_statements. */
  extra?: Record<string, string>;
}): Promise<RunningPgbouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pgbouncer-'));
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const userlist = join(dir, 'userlist.txt');
  writeFileSync(userlist, `${quoted(settings.user)} ${quoted(settings.password)}\n`, { mode: 0o600 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `${settings.name} = host=${settings.server.host} port=${settings.server.port} dbname=${settings.server.database}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      // No Unix socket: only the loopback port.
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${userlist}`,
      `pool_mode = ${settings.poolMode ?? 'session'}`,
      `default_pool_size = ${settings.poolSize}`,
      `max_client_conn = ${settings.maxClientConn ?? settings.poolSize * 2}`,
      `server_idle_timeout = ${settings.serverIdleSeconds}`,
      'client_tls_sslmode = disable',
      'server_tls_sslmode = disable',
      'log_connections = 0',
      'log_disconnections = 0',
      'log_pooler_errors = 1',
      'stats_period = 3600',
      ...Object.entries(settings.extra ?? {}).map(([name, value]) => `${name} = ${value}`),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    // The account exists: the embedded PostgreSQL runs as it.
    const id = (flag: string) => Number(execFileSync('id', [flag, ACCOUNT], { encoding: 'utf8' }).trim());
    const [uid, gid] = [id('-u'), id('-g')];
    for (const path of [dir, ini, userlist]) chownSync(path, uid, gid);
  }
  const child: ChildProcess = spawn(settings.program ?? PGBOUNCER, [...(asRoot ? ['-u', ACCOUNT] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  track(child);
  let output = '';
  child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      // SIGTERM: immediate shutdown (SIGINT would wait for clients).
      child.kill('SIGTERM');
      const forced = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(forced);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let waited = 0; !/listening on 127\.0\.0\.1:\d+/.test(output); waited += 50) {
    if (child.exitCode !== null || child.signalCode !== null || waited > 10_000) {
      await stop();
      throw new Error(`pgbouncer did not start: ${output.trim()}`);
    }
    await sleep(50);
  }
  return { port, pid: child.pid!, stop };
}

/** The bare Node relay (node-relay.ts) as its own process, to the server: the floor a Node proxy stands on. */
export async function startNodeRelay(server: { host: string; port: number }): Promise<RunningPgbouncer> {
  const port = await freePort();
  const entry = fileURLToPath(new URL('./node-relay.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry, String(port), server.host, String(server.port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const listening = await new Promise<boolean>((resolve) => {
    child.stdout!.once('data', () => resolve(true));
    child.once('exit', () => resolve(false));
  });
  if (!listening) throw new Error('the Node relay did not start');
  return { port, pid: child.pid!, stop };
}
