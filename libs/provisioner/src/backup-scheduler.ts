import { dirname } from 'node:path';
import pg from 'pg';
import { cutQueriesAtDeadline, withDeadline } from '@platform/deadline';
import type { BackupHealth } from '@platform/domain';
import { openClusterBackups, readArchiverStatus, type ArchiverStatus, type BackupRecord, type BackupType, type ClusterBackups, type RestoreWindow } from '@platform/postgres-launcher';
import { PeriodicWork } from '@platform/process';
import { groupByServer, localDataDirectory, type NamedServer } from './server-location.js';

/** How often base backups are taken (README, "Backups"). */
export interface BackupSchedule {
  fullEveryMs: number;
  /** A differential backup (what changed since the last full one) when the newest backup is older than this. */
  diffEveryMs: number;
}

/**
 * The backup a cluster needs now: a full one when it has none or its newest full one is older than
 * `fullEveryMs`; else a differential one when its newest backup is older than `diffEveryMs`; else none.
 */
export function dueBackup(backups: readonly BackupRecord[], now: Date, schedule: BackupSchedule): BackupType | null {
  const age = (backup: BackupRecord | undefined) => (backup ? now.getTime() - backup.startedAt.getTime() : Infinity);
  const newestFull = backups.filter((backup) => backup.type === 'full').at(-1);
  if (age(newestFull) >= schedule.fullEveryMs) return 'full';
  if (age(backups.at(-1)) >= schedule.diffEveryMs) return 'diff';
  return null;
}

/** The session advisory lock, on the cluster being backed up, of the replica that backs it up (any fixed number). */
const BACKUP_LOCK_KEY = 7_230_002;
/** The longest wait before trying again a backup that failed (the wait doubles from the loop's interval). */
const MAX_RETRY_MS = 3_600_000;

export interface BackupSchedulerOptions {
  /** What each server is to the platform and its superuser URL; one server named several times is looked after once. */
  servers: readonly { name: string; url: string }[];
  /** Servers that come and go (dedicated compute instances' servers this process runs), asked at each pass and report. */
  moreServers?: () => readonly { name: string; url: string }[];
  /** The pgBackRest program (BACKUP_PGBACKREST). */
  pgbackrest: string;
  schedule: BackupSchedule;
  /** How often each server is looked at: its archiver sampled, a due backup taken. */
  intervalMs: number;
  /** How long a server has to answer (readiness must answer). */
  timeoutMs: number;
  log: { info(details: object, message: string): void; warn(details: object, message: string): void; error(details: object, message: string): void };
  now?: () => Date;
}

interface Watched extends NamedServer {
  /** Located once: the cluster's backups when its configuration is on this machine, else null. */
  backups?: ClusterBackups | null;
  archiving?: ArchiverStatus['state'] | 'unknown';
  newest?: BackupRecord | null;
  window?: RestoreWindow;
  retryAt?: number;
  failures: number;
}

/**
 * Base backups of the clusters whose backups are configured on this machine (a cluster the
 * launcher started with `backups` keeps `pgbackrest.conf` beside its `data/`; the server says where
 * that is), and the archiving health of every server. Each pass (PeriodicWork) samples every
 * server's archiver, logging when archiving starts failing and when it recovers, and takes the
 * backup that is due (dueBackup) under a session advisory lock on that cluster, so that two API
 * replicas never back it up at once; expire follows each backup (pgBackRest's own retention). A
 * failed backup is tried again after the interval, doubling up to an hour. `stop` ends a backup
 * under way (pgBackRest stops cleanly, and the next one resumes what it had copied).
 */
export class BackupScheduler {
  private readonly fixed: Watched[];
  /** The servers of `moreServers` seen at the last look, by name and address (a server started again elsewhere is located again). */
  private readonly changing = new Map<string, Watched>();
  private readonly loop: PeriodicWork;
  private readonly ending = new AbortController();
  private readonly now: () => Date;

  constructor(private readonly options: BackupSchedulerOptions) {
    this.fixed = groupByServer(options.servers).map((server) => ({ ...server, failures: 0 }));
    this.now = options.now ?? (() => new Date());
    this.loop = new PeriodicWork(() => this.pass(), {
      intervalMs: options.intervalMs,
      onError: (error) => options.log.error({ err: error }, 'a backup pass failed; the next one tries again'),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** A pass now (or right after the one under way), started or not; resolves when it has run. */
  runNow(): Promise<void> {
    return this.loop.runNow();
  }

  async stop(): Promise<void> {
    this.ending.abort();
    await this.loop.stop();
  }

  /** The servers to look after now: the fixed ones, then those `moreServers` names (state kept while their name and address stay). */
  private servers(): Watched[] {
    const now = new Map<string, Watched>();
    for (const { name, url } of this.options.moreServers?.() ?? []) {
      const key = `${name} ${url}`;
      now.set(key, this.changing.get(key) ?? { url, names: [name], failures: 0 });
    }
    this.changing.clear();
    for (const [key, server] of now) this.changing.set(key, server);
    return [...this.fixed, ...now.values()];
  }

  /** Each server's archiving as it is now, with what the last pass learnt of its backups. */
  async report(): Promise<BackupHealth[]> {
    return Promise.all(
      this.servers().map(async (server) => {
        let status: ArchiverStatus | null = null;
        try {
          status = await withDeadline(this.options.timeoutMs, () => this.sample(server));
        } catch {
          // Said in fixed words below: readiness answers anyone.
        }
        return healthOf(server, status);
      }),
    );
  }

  private async pass(): Promise<void> {
    for (const server of this.servers()) {
      if (this.ending.signal.aborted) return;
      try {
        await this.sample(server);
      } catch (error) {
        this.noteArchiving(server, 'unknown', error);
        continue;
      }
      const backups = await this.locate(server);
      if (backups) await this.lookAfter(server, backups);
    }
  }

  /** The cluster's backups when its configuration is on this machine; asked of the server once it answers. */
  private async locate(server: Watched): Promise<ClusterBackups | null> {
    if (server.backups !== undefined) return server.backups;
    try {
      const dataDir = await localDataDirectory(server.url, this.options.timeoutMs);
      server.backups = dataDir === null ? null : openClusterBackups(dirname(dataDir), { pgbackrest: this.options.pgbackrest, url: server.url });
    } catch (error) {
      this.options.log.error({ servers: server.names, err: error }, 'could not find out whether the backups of a PostgreSQL server are configured here; trying again next pass');
      return null;
    }
    if (server.backups) this.options.log.info({ servers: server.names, stanza: server.backups.stanza }, 'taking the base backups of a PostgreSQL server');
    return server.backups;
  }

  private async sample(server: Watched): Promise<ArchiverStatus> {
    const client = cutQueriesAtDeadline(new pg.Client({ connectionString: server.url, connectionTimeoutMillis: this.options.timeoutMs }));
    client.on('error', () => {});
    await client.connect();
    try {
      const status = await readArchiverStatus(client);
      this.noteArchiving(server, status.state, null, status);
      return status;
    } finally {
      await client.end().catch(() => {});
    }
  }

  private noteArchiving(server: Watched, state: Watched['archiving'], error: unknown, status?: ArchiverStatus): void {
    const was = server.archiving;
    server.archiving = state;
    if (was === state) return;
    if (state === 'failing') {
      this.options.log.error(
        { servers: server.names, lastFailedWal: status?.lastFailedWal, lastFailedAt: status?.lastFailedAt, failedCount: status?.failedCount },
        'WAL archiving of a PostgreSQL server is failing: its WAL waits on its disk up to BACKUP_WAL_QUEUE_MAX_MB, then is dropped and point-in-time restore has a gap',
      );
    } else if (state === 'ok' && was === 'failing') {
      this.options.log.info({ servers: server.names, lastArchivedWal: status?.lastArchivedWal }, 'WAL archiving of a PostgreSQL server works again');
    } else if (state === 'unknown') {
      this.options.log.warn({ servers: server.names, err: error }, 'could not read the WAL archiving of a PostgreSQL server');
    }
  }

  private async lookAfter(server: Watched, backups: ClusterBackups): Promise<void> {
    try {
      const kept = await backups.list();
      server.newest = kept.at(-1) ?? null;
      if (dueBackup(kept, this.now(), this.options.schedule) && (server.retryAt ?? 0) <= Date.now()) await this.backUp(server, backups);
      const window = await backups.restoreWindow();
      if (window.hasGap && !server.window?.hasGap) {
        this.options.log.error({ servers: server.names, restorableFrom: window.from }, 'WAL of a PostgreSQL server is missing from its backups (dropped past BACKUP_WAL_QUEUE_MAX_MB): instants before the gap cannot be restored');
      }
      server.window = window;
    } catch (error) {
      if (this.ending.signal.aborted) return;
      server.failures++;
      const waitMs = Math.min(MAX_RETRY_MS, this.options.intervalMs * 2 ** (server.failures - 1));
      server.retryAt = Date.now() + waitMs;
      this.options.log.error({ servers: server.names, err: error, retryInMs: waitMs }, 'the backups of a PostgreSQL server failed');
    }
  }

  /** Takes the due backup unless another replica holds the cluster's backup lock (or took it meanwhile). */
  private async backUp(server: Watched, backups: ClusterBackups): Promise<void> {
    const client = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: this.options.timeoutMs });
    client.on('error', () => {});
    await client.connect();
    try {
      const { rows } = await client.query<{ claimed: boolean }>('select pg_catalog.pg_try_advisory_lock($1) as claimed', [BACKUP_LOCK_KEY]);
      if (!rows[0].claimed) return;
      const type = dueBackup(await backups.list(), this.now(), this.options.schedule);
      if (!type) return;
      const started = Date.now();
      this.options.log.info({ servers: server.names, type }, 'base backup started');
      const made = await backups.backup(type, this.ending.signal);
      server.newest = made;
      server.failures = 0;
      server.retryAt = undefined;
      this.options.log.info({ servers: server.names, type: made.type, label: made.label, repositoryBytes: made.repositoryBytes, ms: Date.now() - started }, 'base backup done');
    } finally {
      // Ending the session releases the lock.
      await client.end().catch(() => {});
    }
  }
}

function healthOf(server: Watched, status: ArchiverStatus | null): BackupHealth {
  const managed = Boolean(server.backups);
  return {
    servers: server.names,
    archiving: status?.state ?? 'unknown',
    lastArchivedAt: status?.lastArchivedAt ?? null,
    lastFailedAt: status?.lastFailedAt ?? null,
    failedCount: status?.failedCount ?? null,
    managed,
    lastBackup: server.newest ? { type: server.newest.type, finishedAt: server.newest.finishedAt } : null,
    restorableFrom: server.window?.from ?? null,
    walGap: server.window?.hasGap ?? false,
    ...(status ? {} : { unknown: 'the server did not answer' }),
  };
}
