import type { MikroORM } from '@mikro-orm/postgresql';
import { isUuid, type Database, type DatabaseLocator } from '@platform/domain';
import { DatabaseEntity } from '../entities/database.entity.js';
import { toDatabase, toWorkspace } from './mappers.js';

/**
 * Finds live databases by path or id for callers without a developer token. READY databases are
 * cached for `ttlMs` (the staleness bound: a deleted database may be addressed that long on
 * another replica, where its data plane then answers 404); anything else is read every time.
 */
export class CachedDatabaseLocator implements DatabaseLocator {
  private readonly cache = new Map<string, { database: Database; expires: number }>();

  constructor(
    private readonly orm: MikroORM,
    private readonly options: { ttlMs: number; maxEntries?: number } = { ttlMs: 5_000 },
  ) {}

  findBySlugAndName(workspaceSlug: string, name: string): Promise<Database | null> {
    return this.cached(`path:${workspaceSlug}/${name}`, { workspace: { slug: workspaceSlug }, name, deleted: null });
  }

  findById(id: string): Promise<Database | null> {
    if (!isUuid(id)) return Promise.resolve(null);
    return this.cached(`id:${id}`, { id, deleted: null });
  }

  private async cached(key: string, where: object): Promise<Database | null> {
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.database;
    const row = await this.orm.em.fork().findOne(DatabaseEntity, where, { populate: ['workspace'] });
    const database = row ? toDatabase(row, toWorkspace(row.workspace)) : null;
    if (database?.status === 'READY') {
      if (this.cache.size >= (this.options.maxEntries ?? 10_000)) this.cache.clear();
      this.cache.set(key, { database, expires: Date.now() + this.options.ttlMs });
    } else {
      this.cache.delete(key);
    }
    return database;
  }
}
