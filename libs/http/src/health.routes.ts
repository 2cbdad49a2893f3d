import { UnavailableError } from '@platform/domain';
import { defineRoute } from './route.js';
import { oneOf, record } from './schema.js';

/** What the health routes need; both apps' scopes provide it. */
export interface HealthScope {
  controlPlaneReady(): Promise<boolean>;
}

const HealthSchema = record({ status: oneOf(['ok']) });

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
      if (!(await scope.controlPlaneReady())) throw new UnavailableError('control_plane_unavailable', 'The control plane is not reachable');
      return { status: 'ok' };
    },
  }),
];
