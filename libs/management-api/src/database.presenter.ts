import { DATABASE_NAME_MAX_LENGTH, REGIONS, SHOWN_DATABASE_STATUSES, canExpand, shownDatabaseStatus, type ComputeType, type Database } from '@platform/domain';
import { bool, dateTime, oneOf, optional, record, text, uuid } from '@platform/http';
import { WorkspaceSchema, presentWorkspace } from './workspace.presenter.js';

const databaseFields = {
  id: uuid(),
  name: text({ min: 1, max: DATABASE_NAME_MAX_LENGTH }),
  workspace: WorkspaceSchema,
  status: oneOf(
    SHOWN_DATABASE_STATUSES,
    'REQUESTED -> BUILT -> READY; PENDING and POOLED are reserved. DELETED: deleted (see `deleted`), refusing connections, restorable until the platform’s retention ends. ' +
      'FAILED: a restore or branch that cannot be made (see `failure`); it holds no data and is not retried: delete it (it is purged at once) and ask for another instant',
  ),
  region: oneOf(REGIONS),
  expandable: bool('Whether the database can take dedicated compute now: it is READY, has no compute instance, and the platform runs dedicated compute (POST D/compute would be accepted)'),
  apiHost: text({ max: 2048, description: 'The {api_url} serving this database’s tenants and users' }),
  dbHost: text({
    max: 2048,
    description:
      'postgres://{gateway}/{database name}: the platform’s PostgreSQL gateway and the database’s name, without credentials ' +
      '(connect with a credential’s id and password, over TLS)',
  }),
  created: dateTime(),
  deleted: optional(dateTime('When the database was deleted; only on a deleted database (status DELETED)')),
  failure: optional(text({ max: 2000, description: 'Only on a FAILED database: why the restore or branch cannot be made' })),
  sharded: bool('Always false until a distributed engine serves sharded databases'),
  source: optional(
    record(
      {
        id: uuid('The database whose data this one was made from (it may have been renamed or deleted since)'),
        at: dateTime('The instant of that database’s data this one holds: every transaction committed by then, none after'),
      },
      'Only on a database made by a point-in-time restore or a branch (POST with `from`). Not `parent`, which a rename answers with the database as it was before it',
    ),
  ),
};

export const DatabaseSchema = record(databaseFields, 'A database');

export const RenamedDatabaseSchema = record(
  {
    ...databaseFields,
    parent: record({ id: uuid(), name: text({ max: DATABASE_NAME_MAX_LENGTH }) }, 'The database as it was before this rename'),
  },
  'A renamed database',
);

/** Where a database is reached: the scope provides both. */
export interface DatabaseHosts {
  /** The PostgreSQL gateway's public postgres://host:port. */
  gatewayUrl: string;
  /** The {api_url}, a database's apiHost. */
  publicApiUrl: string;
  /** The compute types on offer (none: no dedicated compute), for `expandable`. */
  computeCatalog: readonly ComputeType[];
}

/** The gateway's address with the database's name, as clients connect to it. */
export function databaseUrl(database: Pick<Database, 'name'>, hosts: Pick<DatabaseHosts, 'gatewayUrl'>): string {
  return `${hosts.gatewayUrl.replace(/\/$/, '')}/${encodeURIComponent(database.name)}`;
}

export function presentDatabase(database: Database, hosts: DatabaseHosts) {
  return {
    id: database.id,
    name: database.name,
    workspace: presentWorkspace(database.workspace),
    status: shownDatabaseStatus(database),
    region: database.region,
    expandable: !database.deleted && canExpand(database, hosts.computeCatalog),
    apiHost: hosts.publicApiUrl,
    dbHost: databaseUrl(database, hosts),
    created: database.created.toISOString(),
    ...(database.deleted ? { deleted: database.deleted.toISOString() } : {}),
    ...(database.failure && !database.deleted ? { failure: database.failure } : {}),
    sharded: false,
    ...(database.source ? { source: { id: database.source.databaseId, at: database.source.at.toISOString() } } : {}),
  };
}
