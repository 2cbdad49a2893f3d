import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isUuid, serverSettings, type ComputeDriver, type ComputeServer, type ComputeType } from '@platform/domain';
import { freePort, isPortFree, openClusterBackups, startEmbeddedPostgres, stopServerIn, type BackupSettings, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';

export interface LocalComputeOptions {
  /** Where each instance keeps its cluster: `<dir>/<instance id>/`. */
  dir: string;
  /** Extensions each server loads beside its own (the launcher's `extensionsDir`). */
  extensionsDir?: string;
  onLog?: (instanceId: string, line: string) => void;
  /**
   * Each instance's server archives its WAL and keeps base backups in this repository, under the
   * stanza `compute-<instance id>` (README, "Backups"); absent: instances are not backed up.
   */
  backups?: Omit<BackupSettings, 'stanza'>;
  /** A first backup that failed (the backup scheduler takes it later). */
  onBackupError?: (instanceId: string, error: Error) => void;
}

/** The longest a new server's first full backup may take before the instance starts without it (the scheduler takes it later). */
const FIRST_BACKUP_TIMEOUT_MS = 300_000;

/** An instance's name in the backup repository. */
export function instanceStanza(instanceId: string): string {
  return `compute-${instanceId}`;
}

function assertInstanceId(id: string): void {
  // The id names a folder that is removed recursively: only UUIDs, never a path.
  if (!isUuid(id)) throw new Error(`not an instance id: '${id}'`);
}

/**
 * The server's words without the machine's folders: they reach developers (an instance's health)
 * and say the same with paths inside the instance's folder.
 */
function withoutFolder(text: string, dir: string): string {
  return text.replaceAll(`${dir}/`, '').replaceAll(dir, '.');
}

/**
 * The default compute driver: each instance is a PostgreSQL server on this machine, run from the
 * embedded PostgreSQL binaries on a free loopback port, with the settings of its compute type
 * (serverSettings). A server lives as long as the process that started it (the launcher's
 * watchdog stops it when that process dies, however it dies); the reconciler starts the servers
 * of READY instances again when the platform starts. One machine only: a cloud or Kubernetes
 * driver implements the same port (ComputeDriver) with servers elsewhere.
 */
export class LocalComputeDriver implements ComputeDriver {
  private readonly servers = new Map<string, { handle: EmbeddedPostgresHandle; server: ComputeServer }>();
  /** Why a server this process ran ended on its own, until it runs again. */
  private readonly exits = new Map<string, string>();
  /** One operation per instance at a time. */
  private readonly busy = new Map<string, Promise<unknown>>();

  constructor(private readonly options: LocalComputeOptions) {}

  ensureRunning(instanceId: string, type: ComputeType): Promise<ComputeServer> {
    return this.serially(instanceId, async () => this.servers.get(instanceId)?.server ?? this.start(instanceId, type));
  }

  restart(instanceId: string, type: ComputeType): Promise<ComputeServer> {
    return this.serially(instanceId, async () => {
      await this.stop(instanceId);
      return this.start(instanceId, type);
    });
  }

  running(instanceId: string): ComputeServer | null {
    return this.servers.get(instanceId)?.server ?? null;
  }

  /** Whether instances' servers archive their WAL and are backed up (LocalComputeOptions.backups). */
  get backsUp(): boolean {
    return this.options.backups !== undefined;
  }

  /** The instances whose server this process runs, with its superuser URL (the backup scheduler watches them). */
  runningServers(): { instanceId: string; adminUrl: string }[] {
    return [...this.servers].map(([instanceId, { server }]) => ({ instanceId, adminUrl: server.adminUrl }));
  }

  /** From the instance's folder, which every process of the platform on this machine can read. */
  adminUrl(instanceId: string): string | null {
    const running = this.servers.get(instanceId);
    if (running) return running.server.adminUrl;
    const dir = this.folder(instanceId);
    if (!existsSync(join(dir, 'password')) || !existsSync(join(dir, 'port'))) return null;
    const password = readFileSync(join(dir, 'password'), 'utf8').trim();
    const port = Number(readFileSync(join(dir, 'port'), 'utf8'));
    return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  }

  exitCause(instanceId: string): string | null {
    return this.exits.get(instanceId) ?? null;
  }

  /**
   * Stops the server and removes its folder and its backups: the instance is gone for good (its
   * database moved back to its region's cluster, whose backups hold it from then on, or purged).
   * A repository that cannot be reached fails the removal, which is tried again.
   */
  remove(instanceId: string): Promise<void> {
    return this.serially(instanceId, async () => {
      // stop and stanza-delete --force open no session: a folder that lost its password or port
      // file (a crash mid-removal) still has its stanza deleted, never orphaned.
      const adminUrl = this.adminUrl(instanceId) ?? 'postgres://postgres@127.0.0.1/postgres';
      await this.stop(instanceId);
      const dir = this.folder(instanceId);
      if (this.options.backups) await openClusterBackups(dir, { pgbackrest: this.options.backups.pgbackrest, url: adminUrl })?.deleteStanza();
      rmSync(dir, { recursive: true, force: true });
    });
  }

  async stored(): Promise<string[]> {
    if (!existsSync(this.options.dir)) return [];
    return readdirSync(this.options.dir).filter(isUuid);
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((id) => this.serially(id, () => this.stop(id))));
  }

  private folder(instanceId: string): string {
    assertInstanceId(instanceId);
    return join(resolve(this.options.dir), instanceId);
  }

  private async start(instanceId: string, type: ComputeType): Promise<ComputeServer> {
    const dir = this.folder(instanceId);
    // The port is kept across restarts while it stays free, so the address the control plane
    // recorded stays right; a server another run left behind is stopped by the launcher.
    await stopServerIn(dir);
    const portFile = join(dir, 'port');
    const previous = existsSync(portFile) ? Number(readFileSync(portFile, 'utf8')) : NaN;
    const port = Number.isInteger(previous) && previous > 0 && (await isPortFree(previous)) ? previous : await freePort();
    const handle = await startEmbeddedPostgres({
      dir,
      port,
      settings: serverSettings(type),
      extensionsDir: this.options.extensionsDir,
      backups: this.options.backups ? { ...this.options.backups, stanza: instanceStanza(instanceId) } : undefined,
      onLog: this.options.onLog ? (line) => this.options.onLog!(instanceId, line) : undefined,
    }).catch((error: Error) => {
      throw new Error(withoutFolder(error.message, dir));
    });
    writeFileSync(portFile, String(port));
    await this.firstBackup(instanceId, handle);
    this.exits.delete(instanceId);
    const server = { address: { host: '127.0.0.1', port }, adminUrl: handle.url('postgres') };
    this.servers.set(instanceId, { handle, server });
    // A server that ends (stopped by another replica taking the instance over, or crashed) is no
    // longer this process's: supervision starts it again where it is missing.
    void handle.exited.then(() => {
      if (this.servers.get(instanceId)?.handle !== handle) return;
      this.servers.delete(instanceId);
      const cause = handle.exitCause();
      if (cause) this.exits.set(instanceId, withoutFolder(cause, dir));
    });
    return server;
  }

  /**
   * A new server's first full backup, before any database moves onto it: from then on every
   * instant of the instance can be restored. Before the server is listed as running, so the
   * backup scheduler does not start one beside it. One that fails is the scheduler's to take.
   */
  private async firstBackup(instanceId: string, handle: EmbeddedPostgresHandle): Promise<void> {
    if (!handle.backups) return;
    try {
      // Bounded: a repository that hangs must not hold the instance's start (and its claimed step).
      if ((await handle.backups.list()).length === 0) await handle.backups.backup('full', AbortSignal.timeout(FIRST_BACKUP_TIMEOUT_MS));
    } catch (error) {
      this.options.onBackupError?.(instanceId, error as Error);
    }
  }

  private async stop(instanceId: string): Promise<void> {
    const running = this.servers.get(instanceId);
    this.servers.delete(instanceId);
    if (running) await running.handle.stop();
    else await stopServerIn(this.folder(instanceId));
  }

  private serially<T>(instanceId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.busy.get(instanceId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.busy.set(instanceId, next);
    void next.finally(() => {
      if (this.busy.get(instanceId) === next) this.busy.delete(instanceId);
    }).catch(() => undefined);
    return next;
  }
}
