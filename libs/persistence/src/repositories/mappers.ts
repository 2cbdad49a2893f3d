import type { Database, Developer, Workspace } from '@platform/domain';
import type { DatabaseRow } from '../entities/database.entity.js';
import type { DeveloperRow } from '../entities/developer.entity.js';
import type { WorkspaceRow } from '../entities/workspace.entity.js';

export function toDeveloper(row: DeveloperRow): Developer {
  return { id: row.id, email: row.email, name: row.name ?? null, created: row.created };
}

export function toWorkspace(row: WorkspaceRow): Workspace {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    billingCustomerId: row.billingCustomerId ?? null,
    created: row.created,
  };
}

/** How long a database counts as moving after its move started: one still marked later crashed, and its next run marks it again. */
export const MOVE_STALE_MS = 60_000;

export function isMoving(since: Date | null | undefined): boolean {
  return since != null && Date.now() - since.getTime() < MOVE_STALE_MS;
}

export function toDatabase(row: DatabaseRow, workspace: Workspace): Database {
  return {
    id: row.id,
    workspace,
    name: row.name,
    region: row.region,
    status: row.status,
    physicalName: row.physicalName,
    created: row.created,
    updated: row.updated,
    deleted: row.deleted ?? null,
    instanceId: row.instanceId ?? null,
    server: row.serverHost && row.serverPort ? { host: row.serverHost, port: row.serverPort } : null,
    moving: isMoving(row.movingSince),
    servedSince: row.servedSince ?? null,
    failure: row.failure ?? null,
    source: row.sourceDatabaseId && row.sourceAt ? { databaseId: row.sourceDatabaseId, at: row.sourceAt } : null,
  };
}
