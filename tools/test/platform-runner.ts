// Runs `npm start` (through npm, or its script directly) as a user would, on a folder and ports
// of its own, and tells whether anything of a run is left once it is stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { isPortFree, isProcessAlive } from '@platform/postgres-launcher';
import { freePort } from '@platform/testing';

export interface PlatformEnv extends Record<string, string> {
  EMBEDDED_PG_DIR: string;
  EMBEDDED_PG_PORT: string;
  API_PORT: string;
  OAUTH_PORT: string;
  GATEWAY_PORT: string;
  GATEWAY_ADMIN_PORT: string;
  GATEWAY_POOLED_PORT: string;
}

/**
 * A new folder (the postgres user can enter it) and free ports, none of them the defaults; WAL
 * archiving and backups off (BACKUPS), which only the first test of npm-start.test.ts turns on.
 */
export async function platformEnv(): Promise<{ dir: string; env: PlatformEnv }> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-start-'));
  chmodSync(dir, 0o755);
  const env = {
    EMBEDDED_PG_DIR: join(dir, 'postgres'),
    EMBEDDED_PG_PORT: String(await freePort()),
    API_PORT: String(await freePort()),
    OAUTH_PORT: String(await freePort()),
    GATEWAY_PORT: String(await freePort()),
    GATEWAY_ADMIN_PORT: String(await freePort()),
    GATEWAY_POOLED_PORT: String(await freePort()),
    BACKUPS: 'off',
  };
  return { dir, env };
}

export interface StartedPlatform {
  /** `npm` itself, or the start script when started without npm. */
  child: ChildProcess;
  output: () => string;
  token: string;
  exited: Promise<number | NodeJS.Signals | null>;
}

/**
 * Starts the platform and waits for "The platform is up". `via: 'npm'` runs `npm start` in a
 * process group of its own, as a terminal would (so the group can get a Ctrl-C).
 */
export async function startPlatform(env: PlatformEnv, via: 'npm' | 'script' = 'script'): Promise<StartedPlatform> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, LOG_LEVEL: 'warn' };
  delete childEnv.DATABASE_URL; // these tests are about the embedded default
  const child =
    via === 'npm'
      ? spawn('npm', ['start'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      : spawn(process.execPath, ['--import', 'tsx', 'tools/start.ts'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const deadline = Date.now() + 60_000;
  while (!output.includes('The platform is up')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const token = /export TOKEN=(\S+)/.exec(output)?.[1];
  if (!token) throw new Error(`no token printed:\n${output}`);
  return { child, output: () => output, token, exited };
}

export interface RunningRecord {
  pid: number;
  processes: { postgres: number; api: number; oauth: number; gateway: number };
}

/** The record `npm start` keeps while it runs, next to the local credentials. */
export function runningRecord(dir: string): RunningRecord {
  return JSON.parse(readFileSync(join(dir, 'running-platform.json'), 'utf8')) as RunningRecord;
}

/** What is left of a run: its processes still alive and its ports still taken (empty lists when nothing is). */
export async function leftovers(record: RunningRecord, env: PlatformEnv): Promise<{ processes: string[]; ports: number[] }> {
  const named = { start: record.pid, ...record.processes };
  const processes = Object.entries(named)
    .filter(([, pid]) => isProcessAlive(pid))
    .map(([name, pid]) => `${name} ${pid}`);
  const ports: number[] = [];
  for (const port of platformPorts(env)) if (!(await isPortFree(port))) ports.push(port);
  return { processes, ports };
}

/** Every port a run listens on. */
export function platformPorts(env: PlatformEnv): number[] {
  return [env.EMBEDDED_PG_PORT, env.API_PORT, env.OAUTH_PORT, env.GATEWAY_PORT, env.GATEWAY_ADMIN_PORT].map(Number);
}

/**
 * Opens a connection to the gateway as libpq does with sslmode=verify-full: the 8-byte SSLRequest,
 * then, on 'S', a TLS handshake over the same socket that trusts only `ca` and checks the name
 * `localhost`. Answers the gateway's one-byte answer and whether the certificate was accepted.
 */
export async function gatewayTlsHandshake(port: number, ca: string): Promise<{ answer: string; authorized: boolean; subject: string }> {
  const socket = net.connect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    const sslRequest = Buffer.alloc(8);
    sslRequest.writeInt32BE(8, 0);
    sslRequest.writeInt32BE(80877103, 4);
    socket.write(sslRequest);
    const [answer] = (await once(socket, 'data')) as [Buffer];
    if (answer.toString('latin1') !== 'S') return { answer: answer.toString('latin1'), authorized: false, subject: '' };
    const secure = tls.connect({ socket, ca, servername: 'localhost' });
    try {
      await once(secure, 'secureConnect');
      return { answer: 'S', authorized: secure.authorized, subject: secure.getPeerX509Certificate()?.subject ?? '' };
    } finally {
      secure.destroy();
    }
  } finally {
    socket.destroy();
  }
}
