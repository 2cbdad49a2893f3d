import type { EntityManager } from '@mikro-orm/postgresql';
import type { SigningKeyRecord, SigningKeyRepository, StoredPrivateKey } from '@platform/domain';
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

/** The one private half a row holds (the table's check constraint allows exactly one). */
function storedPrivateKey(sealed: string | null | undefined, plain: Record<string, unknown> | string | null | undefined): StoredPrivateKey {
  if (sealed) return { sealed };
  if (plain) return { plain: typeof plain === 'string' ? (JSON.parse(plain) as Record<string, unknown>) : plain };
  throw new Error('a signing key row holds no private half');
}

/** The key set's advisory lock, beside the control plane's other lock keys (7426001 migrates). */
const SIGNING_KEYS_LOCK = 7426004;

/**
 * The signing key set in the control plane. Private halves are stored as the KeySet hands them
 * over, sealed: this repository never sees a key ring, and never writes a plain private key.
 */
export class MikroSigningKeyRepository implements SigningKeyRepository {
  constructor(private readonly em: EntityManager) {}

  /** An identity map of its own for each call, in the transaction of `exclusively` when there is one. */
  private fresh(): EntityManager {
    return this.em.fork({ keepTransactionContext: true });
  }

  async listVerifying(now: Date): Promise<SigningKeyRecord[]> {
    const rows = await this.fresh().find(
      SigningKeyEntity,
      { $or: [{ expires: null }, { expires: { $gt: now } }] },
      { orderBy: { created: 'desc' } },
    );
    return rows.map(toRecord);
  }

  async findSigning(now: Date, createdBy: Date): Promise<(SigningKeyRecord & { privateKey: StoredPrivateKey }) | null> {
    const row = await this.fresh().findOne(
      SigningKeyEntity,
      { $or: [{ retires: null }, { retires: { $gt: now } }], created: { $lte: createdBy } },
      { orderBy: { created: 'desc' }, populate: ['privateJwk', 'sealedPrivateJwk'] },
    );
    return row ? { ...toRecord(row), privateKey: storedPrivateKey(row.sealedPrivateJwk, row.privateJwk) } : null;
  }

  async insert(record: SigningKeyRecord & { sealedPrivateKey: string }): Promise<void> {
    const { sealedPrivateKey, ...rest } = record;
    const em = this.fresh();
    em.create(SigningKeyEntity, { ...rest, sealedPrivateJwk: sealedPrivateKey, privateJwk: null });
    await em.flush();
  }

  async retireAllExcept(kid: string, retires: Date, expires: Date): Promise<void> {
    await this.fresh().execute(
      `update signing_keys
          set retires = least(coalesce(retires, ?), ?), expires = least(coalesce(expires, ?), ?)
        where kid <> ?`,
      [retires, retires, expires, expires, kid],
    );
  }

  async listPrivateKeys(): Promise<{ kid: string; privateKey: StoredPrivateKey }[]> {
    const rows = await this.fresh()
      .execute<{ kid: string; private_jwk: Record<string, unknown> | string | null; sealed_private_jwk: string | null }[]>(
        `select kid, private_jwk, sealed_private_jwk from signing_keys order by created`,
        [],
        'all',
      );
    return rows.map((row) => ({ kid: row.kid, privateKey: storedPrivateKey(row.sealed_private_jwk, row.private_jwk) }));
  }

  async replacePrivateKey(kid: string, from: StoredPrivateKey, sealed: string): Promise<boolean> {
    // Conditional on what was read: of replicas sealing at once, one write wins and none undoes another's.
    const [condition, value] = 'sealed' in from ? ['sealed_private_jwk = ?', from.sealed] : ['private_jwk = ?::jsonb', JSON.stringify(from.plain)];
    const rows = await this.fresh()
      .execute<{ kid: string }[]>(
        `update signing_keys set sealed_private_jwk = ?, private_jwk = null where kid = ? and ${condition} returning kid`,
        [sealed, kid, value],
        'all',
      );
    return rows.length === 1;
  }

  async exclusively<T>(work: (locked: SigningKeyRepository) => Promise<T>): Promise<T> {
    // A transaction-level lock: released at commit or rollback, and with the connection if the process dies.
    return this.em.fork().transactional(async (tx) => {
      await tx.execute('select pg_advisory_xact_lock(?)', [SIGNING_KEYS_LOCK]);
      return work(new MikroSigningKeyRepository(tx));
    });
  }
}
