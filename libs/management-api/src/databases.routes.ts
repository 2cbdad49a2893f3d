import {
  DATABASE_NAME_MAX_LENGTH,
  DATABASE_NAME_PATTERN,
  REGIONS,
  createDatabase,
  deleteDatabase,
  getDatabase,
  listDatabases,
  renameDatabase,
  type Region,
} from '@platform/domain';
import { defineRoute, respond, arrayOf, oneOf, record, text } from '@platform/http';
import type { ManagementScope } from './management-scope.js';
import { databaseNameParam, workspaceSlugParam } from './common.js';
import { DatabaseSchema, RenamedDatabaseSchema, presentDatabase } from './presenters.js';

const databaseName = (description: string) =>
  text({ min: 1, max: DATABASE_NAME_MAX_LENGTH, pattern: DATABASE_NAME_PATTERN, description });

const CreateDatabaseRequest = record({
  databaseName: databaseName('Unique among the workspace’s databases: letters, digits and underscores, starting with a letter or underscore'),
  region: oneOf(REGIONS),
});
const RenameDatabaseRequest = record({ name: databaseName('The new name; the same rules as at creation') });
const WorkspaceParams = record({ workspaceSlug: workspaceSlugParam });
const DatabaseParams = record({ workspaceSlug: workspaceSlugParam, databaseName: databaseNameParam });
type DatabasePath = { workspaceSlug: string; databaseName: string };

export const databaseRoutes = [
  defineRoute<ManagementScope, { workspaceSlug: string }, undefined, { databaseName: string; region: Region }>({
    method: 'POST',
    path: '/workspaces/{workspaceSlug}/databases',
    operationId: 'createDatabase',
    summary: 'Create a database',
    description:
      'Answers at once with the database in REQUESTED; the provisioner creates the PostgreSQL database and its ' +
      'built-in schema (BUILT), verifies it (READY). Poll the database until its status is READY.',
    tags: ['databases'],
    auth: 'management',
    params: WorkspaceParams,
    body: CreateDatabaseRequest,
    success: { status: 201, description: 'Created, in REQUESTED', schema: DatabaseSchema },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const database = await createDatabase({ ...scope.repos, ...scope }, caller, params.workspaceSlug, {
        name: body.databaseName,
        region: body.region,
      });
      return respond({
        status: 201,
        body: presentDatabase(database, scope.clusters, scope.publicApiUrl),
        headers: { Location: `/workspaces/${database.workspace.slug}/databases/${database.name}` },
      });
    },
  }),
  defineRoute<ManagementScope, { workspaceSlug: string }>({
    method: 'GET',
    path: '/workspaces/{workspaceSlug}/databases',
    operationId: 'listDatabases',
    summary: 'List the workspace’s databases',
    tags: ['databases'],
    auth: 'management',
    params: WorkspaceParams,
    success: { status: 200, description: 'The databases, oldest first', schema: arrayOf(DatabaseSchema) },
    errors: [404],
    handler: async ({ params, caller, scope }) =>
      (await listDatabases(scope.repos, caller, params.workspaceSlug)).map((database) =>
        presentDatabase(database, scope.clusters, scope.publicApiUrl),
      ),
  }),
  defineRoute<ManagementScope, DatabasePath>({
    method: 'GET',
    path: '/workspaces/{workspaceSlug}/databases/{databaseName}',
    operationId: 'getDatabase',
    summary: 'Get a database',
    tags: ['databases'],
    auth: 'management',
    params: DatabaseParams,
    success: { status: 200, description: 'The database', schema: DatabaseSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) =>
      presentDatabase(
        await getDatabase(scope.repos, caller, params.workspaceSlug, params.databaseName),
        scope.clusters,
        scope.publicApiUrl,
      ),
  }),
  defineRoute<ManagementScope, DatabasePath, undefined, { name: string }>({
    method: 'PUT',
    path: '/workspaces/{workspaceSlug}/databases/{databaseName}',
    operationId: 'renameDatabase',
    summary: 'Rename a database',
    description:
      'Renames the database in the platform; its PostgreSQL database and dbHost do not change, so open connections ' +
      'keep working. `parent` is the database as it was before the rename. Renaming to the current name changes nothing.',
    tags: ['databases'],
    auth: 'management',
    params: DatabaseParams,
    body: RenameDatabaseRequest,
    success: { status: 200, description: 'The renamed database', schema: RenamedDatabaseSchema },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const { database, previous } = await renameDatabase(scope.repos, caller, params.workspaceSlug, params.databaseName, body.name);
      return { ...presentDatabase(database, scope.clusters, scope.publicApiUrl), parent: previous };
    },
  }),
  defineRoute<ManagementScope, DatabasePath>({
    method: 'DELETE',
    path: '/workspaces/{workspaceSlug}/databases/{databaseName}',
    operationId: 'deleteDatabase',
    summary: 'Delete a database and drop its PostgreSQL database',
    description: 'The name is free again at once. Open connections to the database are ended.',
    tags: ['databases'],
    auth: 'management',
    params: DatabaseParams,
    success: { status: 204, description: 'Deleted' },
    errors: [404],
    handler: async ({ params, caller, scope }) => {
      await deleteDatabase({ ...scope.repos, ...scope }, caller, params.workspaceSlug, params.databaseName);
      return undefined;
    },
  }),
];
