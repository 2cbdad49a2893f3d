import { chownSync, copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ClusterBackups } from './backups.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import { ensureServerAccount } from './server-account.js';
import type { RestoreWindow } from './wal-archive.js';

/** The instant asked for is outside what the backups and the archived WAL can reach. */
export class OutsideRestoreWindowError extends Error {
  constructor(
    readonly at: Date,
    readonly window: RestoreWindow,
  ) {
    const span = window.from && window.to ? `from ${window.from.toISOString()} to now` : 'no instant (no backup precedes the archived WAL; take one)';
    super(`${at.toISOString()} cannot be restored: the backups reach ${span}`);
  }
}

export interface PointInTimeRestore {
  /** The instant the restored cluster shows: every transaction committed by then, none after. */
  at: Date;
  /** An empty or missing folder the server's account can reach; the restored cluster's `data/` and `password` go there (the caller removes it). */
  dir: string;
  port: number;
  /** Server settings of the restored server (it never archives WAL: archive_mode stays off). */
  settings?: Readonly<Record<string, string>>;
  onLog?: (line: string) => void;
  binaryCacheDir?: string;
  signal?: AbortSignal;
}

/**
 * A cluster as it was at an instant, on a scratch folder, started on `port`: a copy to move a
 * database out of, never the cluster itself. Checks the instant against the restore window first
 * (OutsideRestoreWindowError) after archiving the source's recent WAL (when it answers), restores
 * the newest backup before it and lets the server replay WAL up to it and promote itself. Its superuser is the source's, with the
 * source's password (a physical copy: the same roles).
 */
export async function restoreToPointInTime(backups: ClusterBackups, restore: PointInTimeRestore): Promise<EmbeddedPostgresHandle> {
  if (restore.at.getTime() > Date.now()) throw new OutsideRestoreWindowError(restore.at, await backups.restoreWindow());
  // Recovery stops at the first commit after its target: one must be archived, whatever the
  // server wrote since. Once that is done, every instant until then can be reached. A source that
  // does not answer (its disk lost) is restored from what the archive holds.
  const asked = new Date();
  const archived = await backups.archiveNow().then(
    () => null,
    (error: Error) => error,
  );
  const found = await backups.restoreWindow();
  const window = archived || !found.from ? found : { ...found, to: asked };
  if (!window.from || !window.to || restore.at < window.from || restore.at > window.to) {
    if (archived && window.to && restore.at > window.to) throw new Error(`${restore.at.toISOString()} is later than the archived WAL reaches, and archiving it now failed: ${archived.message}`);
    throw new OutsideRestoreWindowError(restore.at, window);
  }

  const dir = resolve(restore.dir);
  const dataDir = join(dir, 'data');
  const account = ensureServerAccount();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) throw new Error(`${dataDir} is not empty: a restore needs an empty folder`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (account) chownSync(dataDir, account.uid, account.gid);
  copyFileSync(join(backups.clusterDir, 'password'), join(dir, 'password'));
  await backups.restoreInto(dataDir, restore.at, restore.signal);
  return startEmbeddedPostgres({ dir, port: restore.port, settings: restore.settings, onLog: restore.onLog, binaryCacheDir: restore.binaryCacheDir });
}
