import { statfs } from 'node:fs/promises';
import { withDeadline } from '@platform/deadline';
import type { DiskSpace } from '@platform/domain';
import { groupByServer, localDataDirectory, type NamedServer } from './server-location.js';

export interface DiskSpaceOptions {
  /** Free space under this share of the disk (percent) is `low`. */
  warningPercent: number;
  /** How long a server has to say where its data is (readiness must answer). */
  timeoutMs: number;
  /** Told when a server's free space falls under the threshold, and when it is back above. */
  onChange?: (report: DiskSpace) => void;
  /**
   * Told why a server could not be measured. The report itself says so in fixed words: readiness
   * answers anyone, and an error's text names addresses, roles and folders.
   */
  onUnmeasured?: (servers: readonly string[], error: unknown) => void;
}

interface Where {
  /** The data directory, on this machine; null when the server runs elsewhere. */
  dataDirectory: string | null;
}

/**
 * The free space of the disks the platform's PostgreSQL servers write to, read where they run:
 * the server says where its data is (`data_directory`, which wants a superuser or
 * pg_read_all_settings), and when it is a server of this machine (its backend is a local
 * `postgres` process) the disk holding that folder is measured (statfs). A server elsewhere is
 * reported with null figures and why: its disk is the business of that machine's monitoring. Where
 * a server keeps its data is asked once; the disk is measured at every report.
 */
export class DiskSpaceProbe {
  private readonly servers: NamedServer[];
  private readonly where = new Map<string, Where>();
  private readonly wasLow = new Map<string, boolean>();

  /** `servers`: what each server is to the platform and its URL; one server named several times is measured once. */
  constructor(
    servers: readonly { name: string; url: string }[],
    private readonly options: DiskSpaceOptions,
  ) {
    this.servers = groupByServer(servers);
  }

  async report(): Promise<DiskSpace[]> {
    return Promise.all(this.servers.map((server) => this.measure(server)));
  }

  private async measure(server: NamedServer): Promise<DiskSpace> {
    const unknown = (why: string): DiskSpace => ({ servers: server.names, freeBytes: null, totalBytes: null, low: false, unknown: why });
    let where = this.where.get(server.url);
    if (!where) {
      try {
        where = { dataDirectory: await withDeadline(this.options.timeoutMs, () => localDataDirectory(server.url, this.options.timeoutMs)) };
      } catch (error) {
        this.options.onUnmeasured?.(server.names, error);
        return unknown('the server did not answer');
      }
      this.where.set(server.url, where);
    }
    if (where.dataDirectory === null) return unknown('the server runs on another machine');
    let disk;
    try {
      disk = await statfs(where.dataDirectory);
    } catch (error) {
      this.options.onUnmeasured?.(server.names, error);
      return unknown('its disk cannot be measured from here');
    }
    const freeBytes = disk.bavail * disk.bsize;
    const totalBytes = disk.blocks * disk.bsize;
    const report: DiskSpace = { servers: server.names, freeBytes, totalBytes, low: freeBytes * 100 < totalBytes * this.options.warningPercent };
    if ((this.wasLow.get(server.url) ?? false) !== report.low) this.options.onChange?.(report);
    this.wasLow.set(server.url, report.low);
    return report;
  }
}
