// What `npm start` keeps on this machine, in the git-ignored `.data` folder (or the folder above
// EMBEDDED_PG_DIR when that is set): the embedded PostgreSQL, the local credentials, and the
// record of the running platform that `npm run token`, `login` and `keys:rotate` read.
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { readPort, readString, type Env } from '@platform/config';
import { isProcessAlive, serverCanReach } from '@platform/postgres-launcher';

const DEFAULT_EMBEDDED_DIR = '.data/postgres';
/** Where the data goes when the embedded server's account cannot reach the clone. */
const REACHABLE_BASE = '/var/tmp';

/** The folder of the local credentials and the running record: `.data` of the clone (`cwd`) by default. */
export function localStateDir(env: Env, cwd = process.cwd()): string {
  return dirname(resolve(cwd, readString(env, 'EMBEDDED_PG_DIR', DEFAULT_EMBEDDED_DIR)));
}

export interface EmbeddedSettings {
  dir: string;
  port: number;
  /** The default folder the server could not reach, when `dir` is a stand-in for it. */
  unreachable?: string;
}

/**
 * EMBEDDED_PG_DIR and EMBEDDED_PG_PORT. Running as root, the server runs as the `postgres` user;
 * when that user cannot reach the default folder (a clone in a private home folder), the data
 * goes to a folder under /var/tmp named after the clone, so a second start finds it again.
 */
export function embeddedSettings(env: Env, cwd = process.cwd()): EmbeddedSettings {
  const port = readPort(env, 'EMBEDDED_PG_PORT', 54329);
  const dir = resolve(cwd, readString(env, 'EMBEDDED_PG_DIR', DEFAULT_EMBEDDED_DIR));
  if (env.EMBEDDED_PG_DIR || serverCanReach(dir)) return { dir, port };
  const clone = createHash('sha256').update(localStateDir(env, cwd)).digest('hex').slice(0, 12);
  return { dir: join(REACHABLE_BASE, `platform-${clone}`, 'postgres'), port, unreachable: dir };
}

function writePrivate(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    return null;
  }
}

/** What `npm start` keeps for the local installation (mode 0600). */
export interface LocalCredentials {
  /** The default developer, who can sign in on the token service's sign-in page. */
  developer: { email: string; password: string };
  /** A confidential client of the default workspace, for the client_credentials grant. */
  client: { client_id: string; client_secret: string };
}

export function localCredentialsPath(env: Env): string {
  return join(localStateDir(env), 'local-credentials.json');
}

export function readLocalCredentials(env: Env): LocalCredentials | null {
  return readJson<LocalCredentials>(localCredentialsPath(env));
}

export function writeLocalCredentials(env: Env, credentials: LocalCredentials): string {
  const path = localCredentialsPath(env);
  writePrivate(path, credentials);
  return path;
}

/** Where a running `npm start` can be reached, and its processes (mode 0600: the URL holds a password). */
export interface RunningPlatform {
  /** The start script's process. */
  pid: number;
  apiUrl: string;
  issuer: string;
  databaseUrl: string;
  developerTokenTtlSeconds: number;
  processes: { postgres: number | null; api: number; oauth: number };
}

export function runningPlatformPath(env: Env): string {
  return join(localStateDir(env), 'running-platform.json');
}

/** The record of the platform `npm start` runs, unless that start is gone (a crash leaves it behind). */
export function readRunningPlatform(env: Env): RunningPlatform | null {
  const running = readJson<RunningPlatform>(runningPlatformPath(env));
  return running && isProcessAlive(running.pid) ? running : null;
}

export function writeRunningPlatform(env: Env, running: RunningPlatform): void {
  writePrivate(runningPlatformPath(env), running);
}

export function removeRunningPlatform(env: Env): void {
  rmSync(runningPlatformPath(env), { force: true });
}
