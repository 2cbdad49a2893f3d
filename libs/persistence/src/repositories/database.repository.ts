import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ConflictError,
  invalidCursor,
  isUuid,
  pageOf,
  physicalDatabaseName,
  type Page,
  type PageRequest,
  type Database,
  type DatabaseSource,
  type DatabaseRepository,
  type Region,
  type Workspace,
} from '@platform/domain';
import { DatabaseEntity } from '../entities/database.entity.js';
import { WorkspaceEntity } from '../entities/workspace.entity.js';
import { isUniqueViolation } from '../errors.js';
import { toDatabase } from './mappers.js';

const NAME_INDEX = 'databases_workspace_name_live';

/** SQL over a databases row, with the time as its one parameter: deleted, and restorable then (not dropped, retention not over). */
const RESTORABLE = 'deleted is not null and dropped is null and purge_after > ?';

function nameTaken(name: string, cause: unknown): ConflictError {
  return new ConflictError('database_name_taken', `A database named '${name}' already exists in this workspace`, { cause });
}

/** Every query takes the workspace: a database is only ever reached through its workspace. */
export class MikroDatabaseRepository implements DatabaseRepository {
  constructor(private readonly em: EntityManager) {}

  async create(input: { id: string; workspace: Workspace; name: string; region: Region; source?: DatabaseSource }): Promise<Database> {
    const row = this.em.create(DatabaseEntity, {
      id: input.id,
      workspace: this.em.getReference(WorkspaceEntity, input.workspace.id),
      name: input.name,
      region: input.region,
      status: 'REQUESTED',
      physicalName: physicalDatabaseName(input.id),
      attempts: 0,
      sourceDatabaseId: input.source?.databaseId ?? null,
      sourceAt: input.source?.at ?? null,
    });
    try {
      await this.em.flush();
    } catch (error) {
      this.em.clear();
      if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken(input.name, error);
      throw error;
    }
    return toDatabase(row, input.workspace);
  }

  listLivePage(workspace: Workspace, page: PageRequest): Promise<Page<Database>> {
    return this.page(workspace, page, 'deleted is null', []);
  }

  listDeletedPage(workspace: Workspace, page: PageRequest, now: Date): Promise<Page<Database>> {
    return this.page(workspace, page, RESTORABLE, [now]);
  }

  /** A keyset page of the workspace's databases that match `where` (SQL over the row, with `params`). */
  private async page(workspace: Workspace, page: PageRequest, where: string, params: unknown[]): Promise<Page<Database>> {
    const connection = this.em.getConnection();
    if (page.afterId !== null) {
      // The cursor's row stays when its database is deleted, restored or purged (rows are only
      // marked), so a page continues after it; a cursor naming no database of this workspace is
      // not one this list gave.
      const found = isUuid(page.afterId) ? await connection.execute(`select 1 from databases where id = ? and workspace_id = ?`, [page.afterId, workspace.id]) : [];
      if (found.length === 0) throw invalidCursor();
    }
    // Keyset: the index on (workspace_id, created, id) finds the page's first row at once, and
    // the database's own microseconds order rows made in the same millisecond.
    const ids = await connection.execute<{ id: string }[]>(
      `select id from databases
        where workspace_id = ? and ${where}
          and (?::uuid is null or (created, id) > (select created, id from databases where id = ?::uuid))
        order by created, id limit ?`,
      [workspace.id, ...params, page.afterId, page.afterId, page.limit + 1],
    );
    const rows = await this.em.find(DatabaseEntity, { id: { $in: ids.map((row) => row.id) } }, { refresh: true });
    const byId = new Map(rows.map((row) => [row.id, row]));
    const ordered = ids.map(({ id }) => byId.get(id)).filter((row) => row !== undefined);
    return pageOf(
      ordered.map((row) => toDatabase(row, workspace)),
      page,
    );
  }

  async findLiveByName(workspace: Workspace, name: string): Promise<Database | null> {
    const row = await this.em.findOne(DatabaseEntity, { workspace: workspace.id, name, deleted: null });
    return row ? toDatabase(row, workspace) : null;
  }

  async findLiveById(workspace: Workspace, id: string): Promise<Database | null> {
    const row = await this.em.findOne(DatabaseEntity, { id, workspace: workspace.id, deleted: null });
    return row ? toDatabase(row, workspace) : null;
  }

  async rename(database: Database, name: string): Promise<Database> {
    const row = await this.em.findOneOrFail(DatabaseEntity, { id: database.id, workspace: database.workspace.id });
    row.name = name;
    try {
      await this.em.flush();
    } catch (error) {
      this.em.clear();
      if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken(name, error);
      throw error;
    }
    return toDatabase(row, database.workspace);
  }

  async markDeleted(database: Database, when: { deleted: Date; purgeAfter: Date }): Promise<Database | null> {
    const marked = await this.em.nativeUpdate(
      DatabaseEntity,
      { id: database.id, workspace: database.workspace.id, deleted: null },
      { deleted: when.deleted, purgeAfter: when.purgeAfter },
    );
    return marked === 0 ? null : { ...database, deleted: when.deleted };
  }

  async restore(workspace: Workspace, id: string, input: { name?: string; now: Date }): Promise<Database | null> {
    const connection = this.em.getConnection();
    // The name it would take, for the conflict's message; the update checks everything again (and
    // waits for a provisioner dropping it now, then finds it purged).
    const [found] = await connection.execute<{ name: string }[]>(`select name from databases where id = ? and workspace_id = ? and ${RESTORABLE}`, [id, workspace.id, input.now]);
    if (!found) return null;
    const name = input.name ?? found.name;
    let restored: { id: string }[];
    try {
      restored = await connection.execute(
        `update databases set deleted = null, purge_after = null, name = ?, updated = ?
          where id = ? and workspace_id = ? and ${RESTORABLE} returning id`,
        [name, input.now, id, workspace.id, input.now],
      );
    } catch (error) {
      if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken(name, error);
      throw error;
    }
    if (restored.length === 0) return null;
    const row = await this.em.findOneOrFail(DatabaseEntity, { id }, { refresh: true });
    return toDatabase(row, workspace);
  }

  async endRetention(workspace: Workspace, id: string, now: Date): Promise<Database | null> {
    const ended = await this.em
      .getConnection()
      .execute<{ id: string }[]>(`update databases set purge_after = ? where id = ? and workspace_id = ? and ${RESTORABLE} returning id`, [now, id, workspace.id, now]);
    if (ended.length === 0) return null;
    const row = await this.em.findOneOrFail(DatabaseEntity, { id }, { refresh: true });
    return toDatabase(row, workspace);
  }
}
