import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, type Credential, type CredentialRepository, type NewCredential } from '@platform/domain';
import { CredentialEntity, type CredentialRow } from '../entities/credential.entity.js';
import { DatabaseEntity } from '../entities/database.entity.js';

function toCredential(row: CredentialRow, databaseId: string): Credential {
  return { id: row.id, databaseId, tenantId: row.tenantId ?? null, internal: row.internal, created: row.created };
}

/** Every query takes the database: a credential is only ever reached through its database. */
export class MikroCredentialRepository implements CredentialRepository {
  constructor(private readonly em: EntityManager) {}

  async create(input: { id: string; databaseId: string; tenantId: string | null; internal: boolean }): Promise<Credential> {
    const row = this.em.create(CredentialEntity, {
      id: input.id,
      database: this.em.getReference(DatabaseEntity, input.databaseId),
      tenantId: input.tenantId,
      internal: input.internal,
    });
    await this.em.flush();
    return toCredential(row, input.databaseId);
  }

  async listForDatabase(databaseId: string, filter: { tenantId?: string; internal: boolean }): Promise<Credential[]> {
    const rows = await this.em.find(
      CredentialEntity,
      { database: databaseId, internal: filter.internal, deleted: null, ...(filter.tenantId === undefined ? {} : { tenantId: filter.tenantId }) },
      { orderBy: { created: 'asc', id: 'asc' } },
    );
    return rows.map((row) => toCredential(row, databaseId));
  }

  async find(databaseId: string, id: string): Promise<Credential | null> {
    const row = await this.em.findOne(CredentialEntity, { id, database: databaseId, deleted: null });
    return row ? toCredential(row, databaseId) : null;
  }

  /**
   * The lock is the database's row, `for no key update`: it conflicts with itself and with
   * updates of the row, not with the key-share locks that inserting credentials takes on it.
   */
  async createCounted<T>(databaseId: string, create: (live: number, record: (input: NewCredential) => Promise<Credential>) => Promise<T>): Promise<T> {
    return this.em.transactional(async (tx) => {
      const locked = await tx.execute<{ id: string }[]>('select id from databases where id = ? for no key update', [databaseId]);
      if (locked.length === 0) throw new NotFoundError('database_not_found', 'Database not found');
      const [{ live }] = await tx.execute<{ live: number }[]>(
        'select count(*)::int as live from credentials where database_id = ? and deleted is null and not internal',
        [databaseId],
      );
      return create(live, async (input) => {
        const row = tx.create(CredentialEntity, {
          id: input.id,
          database: tx.getReference(DatabaseEntity, databaseId),
          tenantId: input.tenantId,
          internal: input.internal,
        });
        await tx.flush();
        return toCredential(row, databaseId);
      });
    });
  }

  async markDeleted(databaseId: string, id: string): Promise<void> {
    await this.em.nativeUpdate(CredentialEntity, { id, database: databaseId, deleted: null }, { deleted: new Date() });
  }
}
