// Pure reading of what pgBackRest and pg_stat_archiver say: no process, no connection.

/** What `pgbackrest info --output=json` says of one backup. */
export interface BackupRecord {
  label: string;
  type: 'full' | 'diff' | 'incr';
  startedAt: Date;
  finishedAt: Date;
  /** The first and last WAL segments the backup needs to be consistent. */
  walStart: string;
  walStop: string;
  /** Bytes the backup takes in the repository (compressed; an incremental one only its changes). */
  repositoryBytes: number;
}

/** The backups of a stanza, oldest first. */
export function parseBackupInfo(json: string, stanza: string): BackupRecord[] {
  const stanzas = JSON.parse(json) as {
    name: string;
    backup?: { label: string; type: BackupRecord['type']; timestamp: { start: number; stop: number }; archive: { start: string; stop: string }; info: { repository: { delta: number } }; error?: boolean }[];
  }[];
  const found = stanzas.find((entry) => entry.name === stanza);
  return (found?.backup ?? [])
    .filter((backup) => !backup.error)
    .map((backup) => ({
      label: backup.label,
      type: backup.type,
      startedAt: new Date(backup.timestamp.start * 1000),
      finishedAt: new Date(backup.timestamp.stop * 1000),
      walStart: backup.archive.start,
      walStop: backup.archive.stop,
      repositoryBytes: backup.info.repository.delta,
    }))
    .sort((a, b) => a.finishedAt.getTime() - b.finishedAt.getTime());
}

/** A WAL segment of the archive: its name and when it reached the repository. */
export interface ArchivedSegment {
  name: string;
  archivedAt: Date;
}

const SEGMENT_FILE = /^([0-9A-F]{24})-[0-9a-f]{40}(\.[a-z0-9]+)?$/;

/** The WAL segments in a `pgbackrest repo-ls --recurse --output=json archive/<stanza>` listing (not history files, not backup labels). */
export function parseArchiveListing(json: string): ArchivedSegment[] {
  const entries = JSON.parse(json) as Record<string, { type: string; time?: number }>;
  const segments: ArchivedSegment[] = [];
  for (const [path, entry] of Object.entries(entries)) {
    const match = entry.type === 'file' ? SEGMENT_FILE.exec(path.slice(path.lastIndexOf('/') + 1)) : null;
    if (match) segments.push({ name: match[1], archivedAt: new Date((entry.time ?? 0) * 1000) });
  }
  return segments.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A segment's position in the WAL, whatever its timeline: the 8 hex digits of the log and of the
 * segment within it (`segmentsPerLog` = 4 GiB / wal_segment_size, 256 at the default 16 MB).
 */
export function segmentNumber(name: string, segmentsPerLog: number): number {
  return parseInt(name.slice(8, 16), 16) * segmentsPerLog + parseInt(name.slice(16, 24), 16);
}

/** The span of time a point-in-time restore can reach on the WAL line that leads to now. */
export interface RestoreWindow {
  /**
   * The earliest instant: the end of the oldest backup from which the archived WAL runs unbroken to
   * the newest segment, plus a second (pgBackRest records the end in whole seconds, and restores
   * only to an instant after it). Null when no backup comes before that unbroken run: a new backup
   * is needed.
   */
  from: Date | null;
  /** When the newest archived segment reached the repository; later instants need the source's WAL archived first. */
  to: Date | null;
  /**
   * WAL is missing somewhere after the oldest backup kept (pgBackRest dropped it past
   * archive-push-queue-max, or it was lost): instants before the gap cannot be restored to now.
   */
  hasGap: boolean;
}

/**
 * Where a restore can reach, from the backups, the archived segments and the last segment the
 * server counts as archived (`lastArchivedWal`): when the repository lacks that one, pgBackRest
 * dropped it (or the repository lost it) and nothing after it is archived yet, so no backup reaches now.
 */
export function restoreWindow(backups: readonly BackupRecord[], segments: readonly ArchivedSegment[], segmentsPerLog: number, lastArchivedWal: string | null = null): RestoreWindow {
  if (segments.length === 0) return { from: null, to: null, hasGap: false };
  const numbers = [...new Set(segments.map((segment) => segmentNumber(segment.name, segmentsPerLog)))].sort((a, b) => a - b);
  const newestNumber = numbers[numbers.length - 1];
  const serverNewest = lastArchivedWal === null ? newestNumber : segmentNumber(lastArchivedWal, segmentsPerLog);
  let unbrokenFrom = newestNumber;
  for (let i = numbers.length - 2; i >= 0 && numbers[i] === unbrokenFrom - 1; i--) unbrokenFrom = numbers[i];
  // The server's newest archived segment is not in the repository: the unbroken run that reaches now has not begun.
  if (serverNewest > newestNumber) unbrokenFrom = serverNewest + 1;
  const newest = segments.reduce((a, b) => (b.archivedAt > a.archivedAt ? b : a));
  const reaching = backups.filter((backup) => segmentNumber(backup.walStart, segmentsPerLog) >= unbrokenFrom);
  const oldestStart = backups.length > 0 ? Math.min(...backups.map((backup) => segmentNumber(backup.walStart, segmentsPerLog))) : unbrokenFrom;
  return {
    from: reaching.length > 0 ? new Date(reaching[0].finishedAt.getTime() + 1000) : null,
    to: newest.archivedAt,
    hasGap: backups.length > 0 && oldestStart < unbrokenFrom,
  };
}

/** pg_stat_archiver and archive_mode of one server. */
export interface ArchiverStatus {
  /** `off`: the server archives no WAL; `ok`: its last attempt succeeded (or none failed); `failing`: its last attempts failed. */
  state: 'off' | 'ok' | 'failing';
  archivedCount: number;
  lastArchivedWal: string | null;
  lastArchivedAt: Date | null;
  failedCount: number;
  lastFailedWal: string | null;
  lastFailedAt: Date | null;
}

/** The archiver's state from its counters: failing while its newest failure is later than its newest success. */
export function archiverState(archiveMode: string, lastArchivedAt: Date | null, lastFailedAt: Date | null): ArchiverStatus['state'] {
  if (archiveMode === 'off') return 'off';
  if (lastFailedAt && (!lastArchivedAt || lastFailedAt > lastArchivedAt)) return 'failing';
  return 'ok';
}
