import { REGIONS, ValidationError, copyDatabase, createDatabase, deleteDatabase, getDatabase, listDatabases, listDeletedDatabases, purgeDatabase, renameDatabase, restoreDatabase } from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, pageRequest, pagedAnswer, respond, arrayOf, oneOf, optional, queryBoolean, record, text } from '@platform/http';
import { DatabaseSchema, RenamedDatabaseSchema, presentDatabase } from './database.presenter.js';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { DATABASE_PATH, DELETED_DATABASE_PATH, WORKSPACE_PATH, databasePathParams, deletedDatabasePathParams, workspacePathParams } from './path-params.js';
import { databaseNameField, instantOf } from './request-fields.js';

const CreateDatabaseRequest = record({
  databaseName: databaseNameField('Unique among the workspace’s databases: letters, digits and underscores, starting with a letter or underscore'),
  region: optional(oneOf(REGIONS, 'Required for a new empty database; with `from`, the source’s region when omitted')),
  from: optional(
    record(
      {
        database: text({ min: 1, max: 64, description: 'The source: a live database of this workspace, by name or by id' }),
        at: optional(
          text({
            min: 1,
            max: 40,
            description:
              'The instant whose data the new database holds (a date-time with an offset, e.g. 2026-11-22T12:00:00.250Z): every transaction the source committed by then, none after. ' +
              'Omitted: now (a branch)',
          }),
        ),
      },
      'Make the database from another one’s backups: a point-in-time restore (`at`) or a branch (no `at`)',
    ),
  ),
});
const RenameDatabaseRequest = record({ name: databaseNameField('The new name; the same rules as at creation') });
const ListDatabasesQuery = record({
  deleted: optional(
    queryBoolean('true: the deleted databases that can still be restored (status DELETED, with `deleted`) instead of the live ones; false (the default): the live ones'),
  ),
  ...pageQueryFields,
});
const RestoreDatabaseRequest = optional(
  record(
    { name: optional(databaseNameField('Restore under this name instead of the one it had (which may be taken since); the same rules as at creation')) },
    'Optional: no body to restore under its old name',
  ),
);
/** How long deleted databases stay restorable, as the routes describe it. */
const RETENTION =
  'A deleted database can be restored for the platform’s DATABASE_DELETE_RETENTION (7 days unless the operator set another) after its deletion; then its PostgreSQL database is dropped for good.';

export const databaseRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${WORKSPACE_PATH}/databases`,
    operationId: 'createDatabase',
    summary: 'Create a database',
    description:
      'Answers at once with the database in REQUESTED; the provisioner creates the PostgreSQL database and its ' +
      'built-in schema (BUILT), verifies it (READY). Poll the database until its status is READY.\n\n' +
      'With `from`, the new database holds the data of another database of the workspace as it was at `from.at` ' +
      '(a point-in-time restore) or as it is now (a branch, without `at`): its schema, rows, tenants and users, ' +
      'but none of its credentials (create new ones). It is made from the backups of the server that holds the ' +
      'source (its region’s cluster, or its dedicated compute instance’s server) on a scratch server, so the ' +
      'source stays online and untouched; it takes a few seconds plus about the time of a pg_dump and pg_restore ' +
      'of the source (README, "Point-in-time restore and branches"). The new database is on its region’s cluster ' +
      'and its `source` says where its data came from. 400 restore_point_outside_window when `at` is in the future ' +
      'or earlier than the backups reach, or than the source has been on its current server (a move to or from ' +
      'dedicated compute starts its window again; the message gives the window); 409 backups_not_configured when ' +
      'the source’s server is not backed up by the platform; 409 database_not_ready when the source is not READY ' +
      'or is moving between servers; ' +
      '404 database_not_found for a source that is not a live database of the workspace.',
    tags: ['databases'],
    auth: 'management',
    params: workspacePathParams,
    body: CreateDatabaseRequest,
    success: { status: 201, description: 'Created, in REQUESTED', schema: DatabaseSchema, headers: { Location: 'The new database' } },
    errors: [400, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      let database;
      if (body.from) {
        const at = body.from.at === undefined ? undefined : instantOf('from.at', body.from.at);
        database = await copyDatabase(scope, caller, params.workspaceSlug, { name: body.databaseName, region: body.region, from: { database: body.from.database, at } });
      } else {
        if (body.region === undefined) throw new ValidationError('validation_failed', 'region: required for a database made without `from`');
        database = await createDatabase(scope, caller, params.workspaceSlug, { name: body.databaseName, region: body.region });
      }
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
    description: `\`deleted=true\` lists the deleted databases that can still be restored instead, by id. ${RETENTION} ${PAGED}`,
    tags: ['databases'],
    auth: 'management',
    params: workspacePathParams,
    query: ListDatabasesQuery,
    success: { status: 200, description: 'A page of databases, oldest first', schema: arrayOf(DatabaseSchema), headers: PAGE_LINK_HEADER },
    errors: [404],
    handler: async (input) => {
      const { scope, caller, params, query } = input;
      const page = pageRequest(query);
      const databases = query.deleted === true ? await listDeletedDatabases(scope, caller, params.workspaceSlug, page) : await listDatabases(scope, caller, params.workspaceSlug, page);
      return pagedAnswer(databases, (database) => presentDatabase(database, scope), input);
    },
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
    summary: 'Delete a database (it can be restored within the retention)',
    description:
      'The database is marked deleted and its name is free again at once (for a new database, or for another by rename). Its ' +
      'PostgreSQL database is kept but refuses every connection: open sessions end, credentials no longer log in, and its ' +
      'tenants and users are not reached through the API (404, as for a database that does not exist). Answers 200 with ' +
      'the database as it is now: status DELETED, `deleted` set, and its `id`, which restores it (POST W/databases/{databaseId}/restore) ' +
      `or purges it now (POST W/databases/{databaseId}/purge). ${RETENTION} The SPEC does not describe this route (the API ` +
      'family’s MCP server reads every answer as JSON).',
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    success: { status: 200, description: 'Deleted: the database, status DELETED', schema: DatabaseSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => presentDatabase(await deleteDatabase(scope, caller, params.workspaceSlug, params.databaseName), scope),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${DELETED_DATABASE_PATH}/restore`,
    operationId: 'restoreDatabase',
    summary: 'Restore a deleted database',
    description:
      'Brings back a deleted database of the workspace, by id, with its data, tenants, users and credentials as they were ' +
      '(credentials log in again, with the same passwords), under its old name or `name`. 409 database_name_taken when a ' +
      'live database of the workspace has that name: restore under another. 404 database_not_found for an id that is not ' +
      `a restorable deleted database of this workspace (unknown, live, purged, or past its retention). ${RETENTION} ` +
      'A database deleted before it was READY goes on being provisioned.',
    tags: ['databases'],
    auth: 'management',
    params: deletedDatabasePathParams,
    body: RestoreDatabaseRequest,
    success: { status: 200, description: 'Restored: the database, live again', schema: DatabaseSchema },
    errors: [404, 409],
    handler: async ({ params, body, caller, scope }) =>
      presentDatabase(await restoreDatabase(scope, caller, params.workspaceSlug, params.databaseId, { name: body?.name }), scope),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${DELETED_DATABASE_PATH}/purge`,
    operationId: 'purgeDatabase',
    summary: 'Drop a deleted database for good now',
    description:
      'Ends a deleted database’s retention now: it can no longer be restored, and its PostgreSQL database and its ' +
      'credentials’ roles are dropped before this answers (should that fail, the platform retries until it is done; a database on ' +
      'dedicated compute takes its instance with it a moment later). For data that ' +
      'must not outlive the delete (a customer’s request to erase it); otherwise the retention ends on its own. 404 ' +
      'database_not_found for an id that is not a restorable deleted database of this workspace.',
    tags: ['databases'],
    auth: 'management',
    params: deletedDatabasePathParams,
    success: { status: 204, description: 'Purged' },
    errors: [404],
    handler: async ({ params, caller, scope }) => {
      await purgeDatabase(scope, caller, params.workspaceSlug, params.databaseId);
      return undefined;
    },
  }),
];
