import { REGIONS, createDatabase, deleteDatabase, getDatabase, listDatabases, renameDatabase } from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, pageRequest, pagedAnswer, respond, arrayOf, oneOf, record } from '@platform/http';
import { DatabaseSchema, RenamedDatabaseSchema, presentDatabase } from './database.presenter.js';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { DATABASE_PATH, WORKSPACE_PATH, databasePathParams, workspacePathParams } from './path-params.js';
import { databaseNameField } from './request-fields.js';

const CreateDatabaseRequest = record({
  databaseName: databaseNameField('Unique among the workspace’s databases: letters, digits and underscores, starting with a letter or underscore'),
  region: oneOf(REGIONS),
});
const RenameDatabaseRequest = record({ name: databaseNameField('The new name; the same rules as at creation') });

export const databaseRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${WORKSPACE_PATH}/databases`,
    operationId: 'createDatabase',
    summary: 'Create a database',
    description:
      'Answers at once with the database in REQUESTED; the provisioner creates the PostgreSQL database and its ' +
      'built-in schema (BUILT), verifies it (READY). Poll the database until its status is READY.',
    tags: ['databases'],
    auth: 'management',
    params: workspacePathParams,
    body: CreateDatabaseRequest,
    success: { status: 201, description: 'Created, in REQUESTED', schema: DatabaseSchema, headers: { Location: 'The new database' } },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const database = await createDatabase(scope, caller, params.workspaceSlug, { name: body.databaseName, region: body.region });
      return respond({
        status: 201,
        body: presentDatabase(database, scope),
        headers: { Location: `/workspaces/${database.workspace.slug}/databases/${database.name}` },
      });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/databases`,
    operationId: 'listDatabases',
    summary: 'List the workspace’s databases',
    description: PAGED,
    tags: ['databases'],
    auth: 'management',
    params: workspacePathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of databases, oldest first', schema: arrayOf(DatabaseSchema), headers: PAGE_LINK_HEADER },
    errors: [404],
    handler: async (input) =>
      pagedAnswer(await listDatabases(input.scope, input.caller, input.params.workspaceSlug, pageRequest(input.query)), (database) => presentDatabase(database, input.scope), input),
  }),
  defineManagementRoute({
    method: 'GET',
    path: DATABASE_PATH,
    operationId: 'getDatabase',
    summary: 'Get a database',
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    success: { status: 200, description: 'The database', schema: DatabaseSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) =>
      presentDatabase(await getDatabase(scope, caller, params.workspaceSlug, params.databaseName), scope),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: DATABASE_PATH,
    operationId: 'renameDatabase',
    summary: 'Rename a database',
    description:
      'Renames the database in the platform; its PostgreSQL database and dbHost do not change, so open connections ' +
      'keep working. `parent` is the database as it was before the rename. Renaming to the current name changes nothing.',
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    body: RenameDatabaseRequest,
    success: { status: 200, description: 'The renamed database', schema: RenamedDatabaseSchema },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const { database, previous } = await renameDatabase(scope, caller, params.workspaceSlug, params.databaseName, body.name);
      return { ...presentDatabase(database, scope), parent: previous };
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: DATABASE_PATH,
    operationId: 'deleteDatabase',
    summary: 'Delete a database and drop its PostgreSQL database',
    description:
      'The name is free again at once. Open connections to the database are ended. The SPEC does not describe this route; it ' +
      'answers 200 with the deleted database as it was (the API family’s MCP server reads every answer as JSON).',
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    success: { status: 200, description: 'Deleted: the database as it was', schema: DatabaseSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => presentDatabase(await deleteDatabase(scope, caller, params.workspaceSlug, params.databaseName), scope),
  }),
];
