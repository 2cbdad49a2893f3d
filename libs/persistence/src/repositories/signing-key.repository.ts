import type { EntityManager } from '@mikro-orm/postgresql';
import type { SigningKeyRecord, SigningKeyRepository } from '@platform/domain';
import { SigningKeyEntity, type SigningKeyRow } from '../entities/signing-key.entity.js';

function toRecord(row: SigningKeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    alg: row.alg,
    publicJwk: row.publicJwk,
    created: row.created,
    retires: row.retires ?? null,
    expires: row.expires ?? null,
  };
}

export class MikroSigningKeyRepository implements SigningKeyRepository {
  constructor(private readonly em: EntityManager) {}

  async listVerifying(now: Date): Promise<SigningKeyRecord[]> {
    const rows = await this.em.fork().find(
      SigningKeyEntity,
      { $or: [{ expires: null }, { expires: { $gt: now } }] },
      { orderBy: { created: 'desc' } },
    );
    return rows.map(toRecord);
  }

  async findSigning(now: Date, createdBy: Date): Promise<(SigningKeyRecord & { privateJwk: Record<string, unknown> }) | null> {
    const row = await this.em.fork().findOne(
      SigningKeyEntity,
      { $or: [{ retires: null }, { retires: { $gt: now } }], created: { $lte: createdBy } },
      { orderBy: { created: 'desc' }, populate: ['privateJwk'] },
    );
    return row ? { ...toRecord(row), privateJwk: row.privateJwk as Record<string, unknown> } : null;
  }

  async insert(record: SigningKeyRecord & { privateJwk: Record<string, unknown> }): Promise<void> {
    const em = this.em.fork();
    em.create(SigningKeyEntity, { ...record });
    await em.flush();
  }

  async retireAllExcept(kid: string, retires: Date, expires: Date): Promise<void> {
    await this.em.fork().execute(
      `update signing_keys
          set retires = least(coalesce(retires, ?), ?), expires = least(coalesce(expires, ?), ?)
        where kid <> ?`,
      [retires, retires, expires, expires, kid],
    );
  }
}
