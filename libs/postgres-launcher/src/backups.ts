import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { reachablePgbackrest, runPgbackrest } from './pgbackrest.js';
import { canReach, ensureServerAccount, type ServerAccount } from './server-account.js';
import {
  archiverState,
  parseArchiveListing,
  parseBackupInfo,
  restoreWindow,
  segmentNumber,
  type ArchiverStatus,
  type BackupRecord,
  type RestoreWindow,
} from './wal-archive.js';

/** How a cluster's WAL is archived and its base backups kept, with pgBackRest (README, "Backups"). */
export interface BackupSettings {
  /** The pgBackRest program (tools/pgbackrest.mjs puts a wrapper in `.data/pgbackrest/bin/pgbackrest`). */
  pgbackrest: string;
  /** The repository: a folder (repo1-path). PGBACKREST_REPO1_* variables may point it at S3 instead. */
  repoDir: string;
  /** The cluster's name in the repository; several clusters may share one repository under different stanzas. */
  stanza: string;
  /** Full backups (and the WAL after them) are kept so that any instant of the last this many days can be restored. */
  retentionDays: number;
  /**
   * WAL waiting for a failing repository past this many MiB is dropped, reported archived
   * (archive-push-queue-max): the server's disk stays bounded and point-in-time restore has a gap
   * until the next backup.
   */
  walQueueMaxMiB: number;
  /** A segment is archived at least this often while anything is written (archive_timeout): the most a lost disk loses. */
  archiveTimeoutSeconds: number;
}

export const BACKUP_DEFAULTS = { retentionDays: 14, walQueueMaxMiB: 1024, archiveTimeoutSeconds: 60 } as const;

/** The configuration file of a cluster's backups, beside its `data/` folder. */
export const BACKUP_CONFIG_FILE = 'pgbackrest.conf';
/** Beside it: pgBackRest's lock and spool folders, the server's account's. */
const WORK_FOLDER = 'pgbackrest';
/** Where the embedded builds' servers put their Unix socket (their compiled-in default); pgBackRest connects through it. */
const SOCKET_FOLDER = '/tmp';
const STANZA_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The text of a cluster's pgBackRest configuration. */
export function backupConfig(options: { settings: BackupSettings; dataDir: string; port: number; workDir: string }): string {
  const { settings } = options;
  if (!STANZA_NAME.test(settings.stanza)) throw new Error(`not a stanza name: '${settings.stanza}'`);
  const lines = [
    '# Written by the platform at each start of the server (libs/postgres-launcher); edits are lost.',
    '[global]',
    `repo1-path=${resolve(settings.repoDir)}`,
    // Time: any instant of the last N days stays restorable; expire runs after each backup.
    'repo1-retention-full-type=time',
    `repo1-retention-full=${settings.retentionDays}`,
    'compress-type=zst',
    `archive-push-queue-max=${settings.walQueueMaxMiB}MiB`,
    // An immediate checkpoint: a backup starts now rather than at the next scheduled checkpoint.
    'start-fast=y',
    `lock-path=${join(options.workDir, 'lock')}`,
    `spool-path=${join(options.workDir, 'spool')}`,
    // Messages on stderr only: the server's log gets archive-push's (the launcher reads it), the
    // caller gets the others'; log files would grow with no end.
    'log-level-console=off',
    'log-level-stderr=warn',
    'log-level-file=off',
    '',
    `[${settings.stanza}]`,
    `pg1-path=${options.dataDir}`,
    `pg1-port=${options.port}`,
    `pg1-socket-path=${SOCKET_FOLDER}`,
    '',
  ];
  return lines.join('\n');
}

/** Quoted for the shell that runs archive_command. */
function shellQuoted(text: string): string {
  return /^[A-Za-z0-9_./=:-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Writes the configuration of the cluster in `dir` (its `data/` and the server's `port`) and makes
 * the folders its account writes to (the repository, when it is missing; the lock and spool
 * folders). Answers the server settings that archive its WAL and the backups' handle, whose stanza
 * the caller creates once the server runs.
 */
export function prepareBackups(dir: string, port: number, settings: BackupSettings, options: { url: string; binaryCacheDir?: string }): { serverSettings: Record<string, string>; backups: ClusterBackups } {
  const account = ensureServerAccount();
  const program = reachablePgbackrest(account, settings.pgbackrest, options.binaryCacheDir);
  const workDir = join(dir, WORK_FOLDER);
  for (const folder of [workDir, join(workDir, 'lock'), join(workDir, 'spool')]) ownedFolder(folder, account);
  const repoDir = resolve(settings.repoDir);
  if (!existsSync(repoDir)) {
    mkdirSync(dirname(repoDir), { recursive: true });
    ownedFolder(repoDir, account);
  }
  if (!canReach(account, repoDir)) {
    throw new Error(`the backup repository ${repoDir} is out of reach of the '${account?.name}' user, which runs PostgreSQL and pgBackRest: choose a folder it can reach (BACKUP_DIR)`);
  }
  const configFile = join(dir, BACKUP_CONFIG_FILE);
  writeFileSync(configFile, backupConfig({ settings, dataDir: join(dir, 'data'), port, workDir }), { mode: 0o644 });
  const archiveCommand = [program, `--config=${configFile}`, `--stanza=${settings.stanza}`, 'archive-push'].map(shellQuoted).join(' ');
  return {
    serverSettings: { archive_mode: 'on', archive_command: `${archiveCommand} %p`, archive_timeout: `${settings.archiveTimeoutSeconds}s` },
    backups: new ClusterBackups({ program, configFile, stanza: settings.stanza, url: options.url, account }),
  };
}

function ownedFolder(path: string, account: ServerAccount | null): void {
  mkdirSync(path, { recursive: true, mode: 0o750 });
  if (account) chownSync(path, account.uid, account.gid);
}

/**
 * The backups of a cluster another process started with backups (the API's view of the embedded
 * cluster): its `pgbackrest.conf` beside `data/` names the stanza. Null when there is none.
 */
export function openClusterBackups(dir: string, options: { pgbackrest: string; url: string; binaryCacheDir?: string }): ClusterBackups | null {
  const configFile = join(resolve(dir), BACKUP_CONFIG_FILE);
  if (!existsSync(configFile)) return null;
  const stanza = readFileSync(configFile, 'utf8')
    .split('\n')
    .map((line) => /^\[([^\]:]+)\]$/.exec(line.trim())?.[1])
    .find((name) => name !== undefined && name !== 'global');
  if (!stanza) throw new Error(`${configFile} names no stanza`);
  const account = ensureServerAccount();
  return new ClusterBackups({ program: reachablePgbackrest(account, options.pgbackrest, options.binaryCacheDir), configFile, stanza, url: options.url, account });
}

export type BackupType = BackupRecord['type'];

interface ClusterBackupsOptions {
  program: string;
  configFile: string;
  stanza: string;
  /** A superuser URL of the cluster: pgBackRest's connections take its password; the archiver's figures are read through it. */
  url: string;
  account: ServerAccount | null;
}

/** One cluster's stanza: its backups, its archived WAL, and restores of it. */
export class ClusterBackups {
  constructor(private readonly options: ClusterBackupsOptions) {}

  get stanza(): string {
    return this.options.stanza;
  }

  /** The folder holding the cluster's `data/` and its configuration. */
  get clusterDir(): string {
    return dirname(this.options.configFile);
  }

  /** A superuser URL of the cluster. */
  get url(): string {
    return this.options.url;
  }

  /** Creates the stanza in the repository; does nothing when it exists and is this cluster's (a repository holding another cluster's under that name is refused). */
  async createStanza(): Promise<void> {
    await this.run(['stanza-create']);
  }

  /**
   * Removes the stanza from the repository: every backup and archived WAL of the cluster, for good.
   * For a cluster that is gone (its server stopped, its folder about to be removed): pgBackRest's
   * `stop` first, so that no archive-push of it writes there again, then `stanza-delete --force`
   * (a server that crashed leaves its postmaster.pid behind).
   */
  async deleteStanza(): Promise<void> {
    await this.run(['stop']);
    await this.run(['--force', 'stanza-delete']);
  }

  /** Takes a backup (a diff or incr with no full before it becomes a full); expire runs after it. Answers the new backup. */
  async backup(type: BackupType, signal?: AbortSignal): Promise<BackupRecord> {
    const before = new Set((await this.list()).map((backup) => backup.label));
    await this.run([`--type=${type}`, 'backup'], signal);
    const made = (await this.list()).filter((backup) => !before.has(backup.label));
    if (made.length === 0) throw new Error(`pgbackrest backup of stanza ${this.stanza} ended without a new backup`);
    return made[made.length - 1];
  }

  /** The backups kept, oldest first. */
  async list(): Promise<BackupRecord[]> {
    return parseBackupInfo(await this.run(['--output=json', 'info']), this.stanza);
  }

  /** pg_stat_archiver and archive_mode of the server. */
  archiverStatus(): Promise<ArchiverStatus> {
    return this.withClient(readArchiverStatus);
  }

  /** Where a point-in-time restore can reach now (README, "Backups"). */
  async restoreWindow(): Promise<RestoreWindow> {
    // The server first: a segment it counts as archived after the listing was read is no gap.
    const server = await this.withClient(async (client) => ({
      segmentSize: Number((await client.query<{ setting: string }>(`select setting from pg_catalog.pg_settings where name = 'wal_segment_size'`)).rows[0].setting),
      lastArchivedWal: (await readArchiverStatus(client)).lastArchivedWal,
    }));
    const [backups, listing] = await Promise.all([this.list(), this.run(['--output=json', '--recurse', 'repo-ls', `archive/${this.stanza}`])]);
    return restoreWindow(backups, parseArchiveListing(listing), 2 ** 32 / server.segmentSize, server.lastArchivedWal);
  }

  /**
   * Makes every transaction committed so far restorable: commits one with a transaction id (recovery
   * stops at the first commit after its target, so one must follow it in the archive), switches to
   * a new WAL segment and waits until the archiver has taken the old one.
   */
  async archiveNow(timeoutMs = 30_000): Promise<void> {
    await this.withClient(async (client) => {
      await client.query('begin');
      await client.query('select pg_catalog.pg_current_xact_id()');
      await client.query('commit');
      const { rows } = await client.query<{ wal: string; segment_size: string }>(
        `select pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal()) as wal, (select setting from pg_catalog.pg_settings where name = 'wal_segment_size') as segment_size`,
      );
      const perLog = 2 ** 32 / Number(rows[0].segment_size);
      const wanted = segmentNumber(rows[0].wal, perLog);
      for (const deadline = Date.now() + timeoutMs; ; ) {
        const status = await readArchiverStatus(client);
        if (status.lastArchivedWal && segmentNumber(status.lastArchivedWal, perLog) >= wanted) return;
        if (status.state === 'off') throw new Error('the server archives no WAL (archive_mode is off)');
        if (Date.now() > deadline) throw new Error(`WAL segment ${rows[0].wal} was not archived within ${timeoutMs} ms (archiving ${status.state}${status.lastFailedWal ? `, last failure on ${status.lastFailedWal}` : ''})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
  }

  /**
   * Restores the cluster as it was at `at` into `dataDir` (an empty folder the account owns, mode
   * 0700): the newest backup that ended before `at`, then WAL replayed up to `at` when the server
   * starts there, which then promotes itself. Its WAL is never archived (archive_mode off): it
   * must not write into this stanza.
   */
  async restoreInto(dataDir: string, at: Date, signal?: AbortSignal): Promise<void> {
    const target = at.toISOString().replace('T', ' ').replace('Z', '+00');
    await this.run([`--pg1-path=${dataDir}`, '--type=time', `--target=${target}`, '--target-action=promote', '--archive-mode=off', 'restore'], signal);
  }

  private run(args: readonly string[], signal?: AbortSignal): Promise<string> {
    // pgBackRest's connections (backup, stanza-create) go through libpq, which takes the role and
    // its password from the environment.
    const url = new URL(this.options.url);
    return runPgbackrest({
      program: this.options.program,
      args: [`--config=${this.options.configFile}`, `--stanza=${this.stanza}`, ...args],
      account: this.options.account,
      cwd: this.clusterDir,
      env: { PGUSER: decodeURIComponent(url.username), PGPASSWORD: decodeURIComponent(url.password) },
      signal,
    });
  }

  private async withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.options.url, connectionTimeoutMillis: 10_000 });
    client.on('error', () => {});
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** pg_stat_archiver and archive_mode of the server `client` is connected to (any server: its WAL need not be ours). */
export async function readArchiverStatus(client: Pick<pg.Client, 'query'>): Promise<ArchiverStatus> {
  const { rows } = await client.query<{
    mode: string;
    archived_count: string;
    last_archived_wal: string | null;
    last_archived_time: Date | null;
    failed_count: string;
    last_failed_wal: string | null;
    last_failed_time: Date | null;
  }>(`select pg_catalog.current_setting('archive_mode') as mode, * from pg_catalog.pg_stat_archiver`);
  const row = rows[0];
  return {
    state: archiverState(row.mode, row.last_archived_time, row.last_failed_time),
    archivedCount: Number(row.archived_count),
    lastArchivedWal: row.last_archived_wal,
    lastArchivedAt: row.last_archived_time,
    failedCount: Number(row.failed_count),
    lastFailedWal: row.last_failed_wal,
    lastFailedAt: row.last_failed_time,
  };
}
