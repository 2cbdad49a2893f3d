import { UnavailableError, type DiskSpace } from '@platform/domain';
import { defineRoute } from './route.js';
import { arrayOf, bool, int, nullable, oneOf, optional, record, text } from './schema.js';

/** What the health routes need; both apps' scopes provide it. */
export interface HealthScope {
  controlPlaneReady(): Promise<boolean>;
  /** The free space of the PostgreSQL servers' disks, where the app can see it (apps/api). */
  diskSpace?(): Promise<DiskSpace[]>;
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

const HealthSchema = record({
  status: oneOf(['ok']),
  disk: optional(arrayOf(DiskSpaceSchema, 'Readiness only: the PostgreSQL servers’ disks (a low one does not make the app unready)')),
});

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
      const [ready, disk] = await Promise.all([scope.controlPlaneReady(), scope.diskSpace?.()]);
      if (!ready) throw new UnavailableError('control_plane_unavailable', 'The control plane is not reachable');
      return disk ? { status: 'ok', disk } : { status: 'ok' };
    },
  }),
];
