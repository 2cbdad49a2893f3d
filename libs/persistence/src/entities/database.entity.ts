import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { DATABASE_STATUSES, REGIONS } from '@platform/domain';
import { WorkspaceEntity } from './workspace.entity.js';

export const DatabaseEntity = defineEntity({
  name: 'Database',
  tableName: 'databases',
  properties: {
    id: p.uuid().primary(),
    workspace: () => p.manyToOne(WorkspaceEntity).deleteRule('restrict'),
    name: p.string(),
    region: p.enum([...REGIONS]),
    status: p.enum([...DATABASE_STATUSES]),
    physicalName: p.string().unique(),
    created: p.datetime().onCreate(() => new Date()),
    updated: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    /** When the database was deleted; it stays restorable until purgeAfter. */
    deleted: p.datetime().nullable(),
    /** While deleted: from when its PostgreSQL database is due to be dropped (the retention's end, or an explicit purge). */
    purgeAfter: p.datetime().nullable(),
    /** Since when its PostgreSQL database refuses connections (closed after a delete); null while it accepts them. */
    closed: p.datetime().nullable(),
    /** When the PostgreSQL database of a deleted platform database was dropped (purged); the row stays, for audit. */
    dropped: p.datetime().nullable(),
    /** The last provisioning failure, kept for operators; never shown to clients. */
    lastError: p.text().nullable(),
    attempts: p.integer().default(0),
    /** The database's live dedicated compute instance (compute_instances, not mapped here). */
    instanceId: p.uuid().nullable(),
    /** Where the database is served when its data is on its instance's server. */
    serverHost: p.text().nullable(),
    serverPort: p.integer().nullable(),
    /** Since when the server that holds it now has held its data (built, or a move's switch committed); null before it is built. */
    servedSince: p.datetime().nullable(),
    /** Set while its data moves between servers (until the switch commits). */
    movingSince: p.datetime().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    /** A restore or branch: the database whose backups it is made from (not mapped as a relation: only its id is read). */
    sourceDatabaseId: p.uuid().nullable(),
    /** With sourceDatabaseId: the instant of the source's data this database holds. */
    sourceAt: p.datetime().nullable(),
    /** A restore or branch that no attempt can make: why (shown to its developers; the row is no longer provisioned). */
    failure: p.text().nullable(),
  },
});
export type DatabaseRow = InferEntity<typeof DatabaseEntity>;
