import { COMPUTE_HEALTH_STATUSES, COMPUTE_INSTANCE_STATUSES, HEALTH_REASON_MAX_LENGTH, INSTANCE_NAME_MAX_LENGTH, type ComputeHealth, type ComputeInstance, type ComputeType, type Database } from '@platform/domain';
import { dateTime, nullable, num, oneOf, optional, record, text, uuid } from '@platform/http';
import { DatabaseSchema, presentDatabase, type DatabaseHosts } from './database.presenter.js';

export const ComputeTypeSchema = record(
  {
    id: text({ min: 1, max: 64, description: 'The type’s id; `instanceSize` may name a type by it' }),
    computeSize: text({ min: 1, max: 64, description: 'The type’s size name (small, medium, large...); `instanceSize` may name a type by it' }),
    memory: text({
      min: 1,
      max: 32,
      description:
        'The memory the server is tuned for. It sets shared_buffers (a quarter), effective_cache_size (three quarters), ' +
        'maintenance_work_mem (a sixteenth, at most 2 GiB) and work_mem (a quarter shared by max_connections, at least 4 MiB)',
    }),
    hourlyCost: num('What an hour of an instance of this type costs, in US dollars'),
  },
  'A size of dedicated compute',
);

export const ComputeHealthSchema = record(
  {
    status: oneOf(COMPUTE_HEALTH_STATUSES, '`ok`: the server runs. `down`: it is not running and does not start (the database cannot be reached meanwhile); the platform keeps trying'),
    reason: nullable(
      text({
        max: HEALTH_REASON_MAX_LENGTH,
        description:
          'Down: why, in the server’s own words (for example `PANIC: could not write to file ...: No space left on device`). ' +
          'Ok: null, or what stopped the server before it was last started again',
      }),
    ),
    since: dateTime('When the server became ok or down'),
  },
  'Whether the instance’s PostgreSQL server runs, as the platform last checked it (every COMPUTE_RECONCILE_MS)',
);

export const ComputeInstanceSchema = record(
  {
    instanceId: uuid(),
    database: DatabaseSchema,
    instanceName: text({ min: 1, max: INSTANCE_NAME_MAX_LENGTH }),
    instanceType: ComputeTypeSchema,
    desiredInstanceType: ComputeTypeSchema,
    status: oneOf(
      COMPUTE_INSTANCE_STATUSES,
      'PENDING -> PROVISIONING (server started, database moved onto it) -> READY; READY -> RESIZING -> READY (instanceType ' +
        'becomes desiredInstanceType); -> DELETING (database moved back to its region’s cluster) -> TERMINATED; FAILED with `failure`',
    ),
    failure: optional(nullable(text({ max: 1000, description: 'Why the instance FAILED' }))),
    health: optional(nullable(ComputeHealthSchema)),
    created: optional(dateTime()),
    updated: optional(dateTime()),
    deleted: optional(dateTime('When it reached TERMINATED')),
  },
  'A dedicated compute instance: a PostgreSQL server of its own that serves the database once READY',
);

export function presentComputeType(type: ComputeType) {
  return { id: type.id, computeSize: type.computeSize, memory: type.memory, hourlyCost: type.hourlyCost };
}

function presentHealth(health: ComputeHealth) {
  return { status: health.status, reason: health.reason, since: health.since.toISOString() };
}

export function presentComputeInstance(instance: ComputeInstance, database: Database, hosts: DatabaseHosts) {
  return {
    instanceId: instance.id,
    database: presentDatabase(database, hosts),
    instanceName: instance.name,
    instanceType: presentComputeType(instance.instanceType),
    desiredInstanceType: presentComputeType(instance.desiredInstanceType),
    status: instance.status,
    failure: instance.failure,
    health: instance.health ? presentHealth(instance.health) : null,
    created: instance.created.toISOString(),
    updated: instance.updated.toISOString(),
    ...(instance.deleted ? { deleted: instance.deleted.toISOString() } : {}),
  };
}
