// What `npm start` keeps on this machine, in the git-ignored `.data` folder (or the folder above
// EMBEDDED_PG_DIR when that is set): the embedded PostgreSQL, the local credentials, the
// development TLS certificates, the key rings that seal SSO client secrets and signing keys, and
// the record of the running platform that `npm run token`, `login` and `keys:rotate` read.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { readExtensionsDir, readPort, readString, type Env } from '@platform/config';
import { isProcessAlive, reachableFolder, serverCanReach } from '@platform/postgres-launcher';

const DEFAULT_EMBEDDED_DIR = '.data/postgres';

/** The folder of the local credentials and the running record: `.data` of the clone (`cwd`) by default. */
export function localStateDir(env: Env, cwd = process.cwd()): string {
  return dirname(resolve(cwd, readString(env, 'EMBEDDED_PG_DIR', DEFAULT_EMBEDDED_DIR)));
}

export interface EmbeddedSettings {
  dir: string;
  port: number;
  /** PG_EXTENSIONS_DIR: extensions the server loads beside its own. */
  extensionsDir: string;
  /** The default folder the server could not reach, when `dir` is a stand-in for it. */
  unreachable?: string;
}

/** The record of the folder under /var/tmp that holds the data when the clone is out of the server's reach. */
export function dataLocationPath(env: Env, cwd = process.cwd()): string {
  return join(localStateDir(env, cwd), 'postgres-location');
}

/**
 * EMBEDDED_PG_DIR and EMBEDDED_PG_PORT, for a start. Running as root, the server runs as the
 * `postgres` user; when that user cannot reach the default folder (a clone in a private home
 * folder), the data goes to a new folder of root's under /var/tmp with a name nobody can guess
 * beforehand, recorded in `.data` so that the next start finds it again (after checking that
 * nobody else can have changed it).
 */
export function prepareEmbeddedSettings(env: Env, cwd = process.cwd()): EmbeddedSettings {
  const port = readPort(env, 'EMBEDDED_PG_PORT', 54329);
  const dir = resolve(cwd, readString(env, 'EMBEDDED_PG_DIR', DEFAULT_EMBEDDED_DIR));
  const extensionsDir = readExtensionsDir(env, cwd);
  if (env.EMBEDDED_PG_DIR || serverCanReach(dir)) return { dir, port, extensionsDir };
  const record = dataLocationPath(env, cwd);
  const recorded = existsSync(record) ? readFileSync(record, 'utf8').trim() : undefined;
  const folder = reachableFolder('platform-', recorded);
  if (folder !== recorded) writePrivate(record, folder);
  return { dir: join(folder, 'postgres'), port, extensionsDir, unreachable: dir };
}

function writePrivate(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
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

/**
 * A key ring `npm start` gives the apps when `variable` is not set: made once in `.data` (mode
 * 0600) and reused, since what was sealed with it is unreadable without it.
 */
function provideKeyRing(env: Env, variable: string, fileName: string): Env {
  if (env[variable]) return env;
  const path = join(localStateDir(env), fileName);
  if (!existsSync(path)) writePrivate(path, `local1:${randomBytes(32).toString('base64')}`);
  return { ...env, [variable]: readFileSync(path, 'utf8').trim() };
}

/** SSO_SECRET_KEYS for apps/api, from `.data/sso-secret-keys` unless set. */
export function provideSsoSecretKeys(env: Env): Env {
  return provideKeyRing(env, 'SSO_SECRET_KEYS', 'sso-secret-keys');
}

export function signingKeySecretKeysPath(env: Env): string {
  return join(localStateDir(env), 'signing-key-secret-keys');
}

/** SIGNING_KEY_SECRET_KEYS for the apps that sign, from `.data/signing-key-secret-keys` unless set. */
export function provideSigningKeySecretKeys(env: Env): Env {
  return provideKeyRing(env, 'SIGNING_KEY_SECRET_KEYS', 'signing-key-secret-keys');
}

/**
 * SIGNING_KEY_SECRET_KEYS for a tool (`keys:rotate`): as set, else the ring `npm start` made here,
 * never a new one: a key sealed with a ring the platform does not have would stop it signing.
 */
export function localSigningKeySecretKeys(env: Env): Env {
  if (env.SIGNING_KEY_SECRET_KEYS || !existsSync(signingKeySecretKeysPath(env))) return env;
  return provideSigningKeySecretKeys(env);
}

/** The development certificate authority and the gateway's certificate it signed (see @platform/dev-tls). */
export function tlsDir(env: Env): string {
  return join(localStateDir(env), 'tls');
}

/** Where a running `npm start` can be reached, and its processes (mode 0600: the URL holds a password). */
export interface RunningPlatform {
  /** The start script's process. */
  pid: number;
  apiUrl: string;
  issuer: string;
  databaseUrl: string;
  developerTokenTtlSeconds: number;
  /** The PostgreSQL gateway's public postgres://host:port. */
  gatewayUrl: string;
  /** The development CA the apps' https certificate comes from (PLATFORM_HTTPS), for the tools to trust; null over http. */
  httpsCaCert?: string | null;
  processes: { postgres: number | null; api: number; oauth: number; gateway: number };
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

/** Held by a start from its first step until it exits: two starts in one place would stop each other's PostgreSQL. */
export function startLockPath(env: Env): string {
  return join(localStateDir(env), 'start.lock');
}

function lockHolder(path: string): number | null {
  try {
    return Number(readFileSync(path, 'utf8').trim());
  } catch {
    return null;
  }
}

/**
 * Takes the start lock, a file holding this process's id, released when this process exits; a
 * lock whose process is gone (a killed start) is taken over. Answers the id of the process that
 * holds it still, or null once this one holds it.
 */
export function takeStartLock(env: Env): number | null {
  const path = startLockPath(env);
  mkdirSync(dirname(path), { recursive: true });
  // Written whole under a name of its own, then linked into place: a link never replaces a file,
  // and a reader never sees the lock without its process id.
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, path);
        process.once('exit', () => {
          if (lockHolder(path) === process.pid) rmSync(path, { force: true });
        });
        return null;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = lockHolder(path);
      if (holder !== null && isProcessAlive(holder)) return holder;
      if (lockHolder(path) === holder) rmSync(path, { force: true });
    }
    throw new Error(`could not take ${path}: other starts keep taking it`);
  } finally {
    unlinkSync(mine);
  }
}
