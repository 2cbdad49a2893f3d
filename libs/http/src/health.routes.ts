import { UnavailableError, type BackupHealth, type DiskSpace } from '@platform/domain';
import { defineRoute } from './route.js';
import { arrayOf, bool, dateTime, int, nullable, oneOf, optional, record, text } from './schema.js';

/** What the health routes need; both apps' scopes provide it. */
export interface HealthScope {
  controlPlaneReady(): Promise<boolean>;
  /** The free space of the PostgreSQL servers' disks, where the app can see it (apps/api). */
  diskSpace?(): Promise<DiskSpace[]>;
  /** The WAL archiving and base backups of the PostgreSQL servers (apps/api). */
  backups?(): Promise<BackupHealth[]>;
}

const DiskSpaceSchema = record(
  {
    servers: arrayOf(text({ max: 200 }), 'What the server is to the platform: `control plane`, and the regions whose cluster it is'),
    freeBytes: nullable(int('Bytes free to the server; null when they cannot be seen from here')),
    totalBytes: nullable(int('The size of the disk that holds its data')),
    low: bool('Free space is under DISK_FREE_WARNING_PERCENT of the disk'),
    unknown: optional(text({ max: 500, description: 'Why the figures are null (a server on another machine, one that does not answer)' })),
  },
  'Free space where one PostgreSQL server keeps its data',
);

const BackupHealthSchema = record(
  {
    servers: arrayOf(text({ max: 200 }), 'What the server is to the platform: `control plane`, and the regions whose cluster it is'),
    archiving: oneOf(
      ['off', 'ok', 'failing', 'unknown'],
      '`failing`: its newest attempt to archive WAL failed; the WAL waits on its disk up to BACKUP_WAL_QUEUE_MAX_MB and is dropped past it. `off`: it archives no WAL',
    ),
    lastArchivedAt: nullable(dateTime('When it last archived a WAL segment')),
    lastFailedAt: nullable(dateTime('When archiving last failed')),
    failedCount: nullable(int('Failed attempts since its statistics were reset')),
    managed: bool('This API takes its base backups (its backup configuration is on this machine)'),
    lastBackup: nullable(record({ type: oneOf(['full', 'diff', 'incr']), finishedAt: dateTime() }, 'Its newest base backup')),
    restorableFrom: nullable(dateTime('The earliest instant a point-in-time restore reaches; null when none does (no backup yet, or none since a gap)')),
    walGap: bool('WAL is missing after the oldest backup kept: instants before the gap cannot be restored'),
    unknown: optional(text({ max: 500, description: 'Why figures are missing' })),
  },
  'WAL archiving and base backups of one PostgreSQL server',
);

const HealthSchema = record({
  status: oneOf(['ok']),
  disk: optional(arrayOf(DiskSpaceSchema, 'Readiness only: the PostgreSQL servers’ disks (a low one does not make the app unready)')),
  backups: optional(arrayOf(BackupHealthSchema, 'Readiness only: the PostgreSQL servers’ WAL archiving and backups (failing archiving does not make the app unready)')),
});

function presentBackups(health: BackupHealth) {
  const at = (date: Date | null) => date?.toISOString() ?? null;
  return {
    ...health,
    lastArchivedAt: at(health.lastArchivedAt),
    lastFailedAt: at(health.lastFailedAt),
    lastBackup: health.lastBackup ? { type: health.lastBackup.type, finishedAt: health.lastBackup.finishedAt.toISOString() } : null,
    restorableFrom: at(health.restorableFrom),
  };
}

export const healthRoutes = [
  defineRoute<HealthScope>({
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'The process is up',
    tags: ['operations'],
    auth: 'none',
    success: { status: 200, description: 'Up', schema: HealthSchema },
    errors: [],
    handler: async () => ({ status: 'ok' }),
  }),
  defineRoute<HealthScope>({
    method: 'GET',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'The control plane is reachable',
    tags: ['operations'],
    auth: 'none',
    success: { status: 200, description: 'Ready', schema: HealthSchema },
    errors: [503],
    handler: async ({ scope }) => {
      const [ready, disk, backups] = await Promise.all([scope.controlPlaneReady(), scope.diskSpace?.(), scope.backups?.()]);
      if (!ready) throw new UnavailableError('control_plane_unavailable', 'The control plane is not reachable');
      return { status: 'ok' as const, ...(disk ? { disk } : {}), ...(backups ? { backups: backups.map(presentBackups) } : {}) };
    },
  }),
];
