import {
  byCreated,
  createComputeInstance,
  deleteComputeInstance,
  getComputeInstance,
  INSTANCE_NAME_MAX_LENGTH,
  listComputeInstances,
  listComputeTypes,
  updateComputeInstance,
} from '@platform/domain';
import { PAGE_LINK_HEADER, arrayOf, optional, pageQueryFields, record, respond, text } from '@platform/http';
import { ComputeInstanceSchema, ComputeTypeSchema, presentComputeInstance, presentComputeType } from './compute.presenter.js';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { pagedList } from './paged-list.js';
import { DATABASE_PATH, WORKSPACE_PATH, computeInstancePathParams, databasePathParams, workspacePathParams } from './path-params.js';
import { instantOf } from './request-fields.js';

const COMPUTE_PATH = `${DATABASE_PATH}/compute`;
const WHO = 'Developers and workspace clients only: a user token answers 403 developer_token_required.';

const instanceName = text({
  min: 1,
  max: INSTANCE_NAME_MAX_LENGTH,
  description: 'Letters, digits, spaces, `_`, `.` or `-`, starting with a letter or digit (400 invalid_instance_name)',
});
const instanceSize = text({
  min: 1,
  max: 64,
  description: 'A compute type of `GET W/compute-types`, named by its computeSize or its id (400 unknown_instance_size)',
});

const CreateInstanceRequest = record({ instanceName, instanceSize });
const UpdateInstanceRequest = record(
  { instanceName: optional(instanceName), instanceSize: optional(instanceSize) },
  'Either or both: a new name, and a new size (a resize)',
);
const ListInstancesQuery = record({
  start: optional(text({ min: 1, max: 40, description: 'Only instances alive at or after this date-time (with an offset, e.g. 2026-11-22T12:00:00Z)' })),
  end: optional(text({ min: 1, max: 40, description: 'Only instances created at or before this date-time; 400 invalid_window when before start' })),
  ...pageQueryFields,
});

export const computeRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/compute-types`,
    operationId: 'listComputeTypes',
    summary: 'List the compute types the workspace may use',
    description:
      `${WHO} The platform’s catalog (COMPUTE_TYPES; small, medium and large by default). An instance’s server runs with ` +
      'settings that follow from its type’s memory (see `memory`) and its max_connections. Empty when the platform runs no dedicated compute.',
    tags: ['compute'],
    auth: 'management',
    params: workspacePathParams,
    success: { status: 200, description: 'The compute types', schema: arrayOf(ComputeTypeSchema) },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => (await listComputeTypes(scope, caller, params.workspaceSlug)).map(presentComputeType),
  }),
  defineManagementRoute({
    method: 'POST',
    path: COMPUTE_PATH,
    operationId: 'createComputeInstance',
    summary: 'Give the database a dedicated compute instance',
    description:
      `${WHO} Answers at once with the instance in PENDING. The reconciler starts a PostgreSQL server of the type and moves ` +
      'the database onto it (PROVISIONING: the database’s writes pause for the copy, a second or two for a small database); ' +
      'at READY the gateway and the API serve the database from it. One instance per database (409 compute_instance_exists); ' +
      'the database must be READY (409 database_not_ready); 409 compute_not_available when the platform runs no dedicated compute.',
    tags: ['compute'],
    auth: 'management',
    params: databasePathParams,
    body: CreateInstanceRequest,
    success: { status: 201, description: 'Created, in PENDING', schema: ComputeInstanceSchema },
    errors: [400, 403, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const { database, instance } = await createComputeInstance(scope, caller, params, body);
      return respond({ status: 201, body: presentComputeInstance(instance, { ...database, instanceId: instance.id }, scope) });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: COMPUTE_PATH,
    operationId: 'listComputeInstances',
    summary: 'List the database’s compute instances',
    description:
      `${WHO} Every instance the database had, TERMINATED ones included; with \`start\` and/or \`end\`, those alive at some ` +
      `point of that window (created at or before end, and not terminated before start). ${PAGED}`,
    tags: ['compute'],
    auth: 'management',
    params: databasePathParams,
    query: ListInstancesQuery,
    success: { status: 200, description: 'A page of instances, oldest first', schema: arrayOf(ComputeInstanceSchema), headers: PAGE_LINK_HEADER },
    errors: [400, 403, 404],
    handler: async (input) => {
      const { start, end } = input.query;
      const window = { start: start === undefined ? undefined : instantOf('start', start), end: end === undefined ? undefined : instantOf('end', end) };
      const { database, instances } = await listComputeInstances(input.scope, input.caller, input.params, window);
      return pagedList(instances, input, byCreated, (instance) => presentComputeInstance(instance, database, input.scope));
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${COMPUTE_PATH}/{instanceId}`,
    operationId: 'getComputeInstance',
    summary: 'Get a compute instance',
    description: `${WHO} An instance of another database, or of another workspace’s, answers 404 compute_instance_not_found.`,
    tags: ['compute'],
    auth: 'management',
    params: computeInstancePathParams,
    success: { status: 200, description: 'The instance', schema: ComputeInstanceSchema },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      const { database, instance } = await getComputeInstance(scope, caller, params, params.instanceId);
      return presentComputeInstance(instance, database, scope);
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${COMPUTE_PATH}/{instanceId}`,
    operationId: 'updateComputeInstance',
    summary: 'Rename or resize a compute instance',
    description:
      `${WHO} A new \`instanceSize\` sets desiredInstanceType; the reconciler restarts the server with the new type’s ` +
      'settings, keeping its data (READY -> RESIZING -> READY; connections are refused for the restart, a second or two). ' +
      '409 compute_instance_not_changeable for an instance DELETING or TERMINATED, and for resizing a FAILED one.',
    tags: ['compute'],
    auth: 'management',
    params: computeInstancePathParams,
    body: UpdateInstanceRequest,
    success: { status: 200, description: 'The instance as changed', schema: ComputeInstanceSchema },
    errors: [400, 403, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const { database, instance } = await updateComputeInstance(scope, caller, params, params.instanceId, body);
      return presentComputeInstance(instance, database, scope);
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${COMPUTE_PATH}/{instanceId}`,
    operationId: 'deleteComputeInstance',
    summary: 'Delete a compute instance',
    description:
      `${WHO} Answers with the instance in DELETING: the reconciler moves the database back to its region’s cluster with ` +
      'its data (writes pause for the copy), then stops the server and removes its files (TERMINATED). Deleting an ' +
      'instance already DELETING or TERMINATED answers it as it is.',
    tags: ['compute'],
    auth: 'management',
    params: computeInstancePathParams,
    success: { status: 200, description: 'The instance, DELETING (or as it was, when already deleting or gone)', schema: ComputeInstanceSchema },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      const { database, instance } = await deleteComputeInstance(scope, caller, params, params.instanceId);
      return presentComputeInstance(instance, database, scope);
    },
  }),
];
