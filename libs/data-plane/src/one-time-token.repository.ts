import { createHash, randomBytes } from 'node:crypto';
import {
  ConflictError, isUuid, NotFoundError, type AccountSecrets, type User, type OneTimeTokenPurpose, type OneTimeTokenRecord, type OneTimeTokenStore, type TokenBinding, type TokenExpectation,
} from '@platform/domain';
import { inTransaction, isUniqueViolation, type Queryable } from './queryable.js';
import { USER_COLUMNS, toUser, type UserRow } from './rows.js';

/** The digest a token is stored and found by: the database never holds a usable token. */
function digestOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

interface TokenRow {
  id: string;
  purpose: OneTimeTokenPurpose;
  user_id: string | null;
  email: string;
  tenant_id: string | null;
  created_by: string | null;
  created: Date;
  expires: Date;
}

const COLUMNS = 'id, purpose, user_id, email, tenant_id, created_by, created, expires';

function recordOf(row: TokenRow): OneTimeTokenRecord {
  return {
    id: row.id,
    purpose: row.purpose,
    userId: row.user_id,
    email: row.email,
    tenantId: row.tenant_id,
    createdBy: row.created_by,
    created: row.created,
    expires: row.expires,
  };
}

/** Live: unused, unrevoked, unexpired, and its account (if any) not deleted. */
const LIVE = `t.consumed is null and t.revoked is null and t.expires > pg_catalog.now()
  and (t.user_id is null or exists (select 1 from users.users u where u.id = t.user_id and u.deleted is null))`;

/** The live token with digest $1 and purpose $2 matching $3 (user), $4 (email), $5 (tenant) where those are not null. */
const MATCHES = `t.token_hash = $1 and t.purpose = $2 and ${LIVE}
  and ($3::uuid is null or t.user_id = $3::uuid) and ($4::text is null or t.email = $4::text) and ($5::uuid is null or t.tenant_id = $5::uuid)`;

/** The parameters of MATCHES; null when an id expected is not even a uuid (then nothing matches). */
function matchParameters(token: string, expect: TokenExpectation): unknown[] | null {
  if ((expect.userId !== undefined && !isUuid(expect.userId)) || (expect.tenantId !== undefined && !isUuid(expect.tenantId))) return null;
  return [digestOf(token), expect.purpose, expect.userId ?? null, expect.email ?? null, expect.tenantId ?? null];
}

/** One-time tokens in a database's auth.one_time_tokens (built-in schema step 15). */
export class PgOneTimeTokenStore implements OneTimeTokenStore {
  constructor(private readonly pool: Queryable) {}

  async issue(binding: TokenBinding, ttlSeconds: number): Promise<{ token: string; record: OneTimeTokenRecord }> {
    const token = randomBytes(32).toString('base64url');
    const { rows } = await this.pool.query<TokenRow>(
      `insert into auth.one_time_tokens (token_hash, purpose, user_id, email, tenant_id, created_by, expires)
       values ($1, $2, $3, $4, $5, $6, pg_catalog.now() + pg_catalog.make_interval(secs => $7::float8))
       returning ${COLUMNS}`,
      [digestOf(token), binding.purpose, binding.userId ?? null, binding.email, binding.tenantId ?? null, binding.createdBy ?? null, ttlSeconds],
    );
    return { token, record: recordOf(rows[0]) };
  }

  async find(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null> {
    const parameters = matchParameters(token, expect);
    if (!parameters) return null;
    const { rows } = await this.pool.query<TokenRow>(`select ${COLUMNS} from auth.one_time_tokens t where ${MATCHES}`, parameters);
    return rows[0] ? recordOf(rows[0]) : null;
  }

  async consume(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null> {
    const parameters = matchParameters(token, expect);
    if (!parameters) return null;
    // One statement: a concurrent consumer waits for this row's lock, then finds it consumed
    // (READ COMMITTED re-checks the WHERE on the row it waited for), so exactly one wins.
    const { rows } = await this.pool.query<TokenRow>(
      `update auth.one_time_tokens t set consumed = pg_catalog.now() where ${MATCHES} returning ${COLUMNS}`,
      parameters,
    );
    return rows[0] ? recordOf(rows[0]) : null;
  }

  async listLive(purpose: OneTimeTokenPurpose, tenantId: string): Promise<OneTimeTokenRecord[]> {
    if (!isUuid(tenantId)) return [];
    const { rows } = await this.pool.query<TokenRow>(
      `select ${COLUMNS} from auth.one_time_tokens t where t.tenant_id = $1 and t.purpose = $2 and ${LIVE} order by t.created desc, t.id desc`,
      [tenantId, purpose],
    );
    return rows.map(recordOf);
  }

  async revoke(id: string, purpose: OneTimeTokenPurpose, tenantId: string): Promise<boolean> {
    if (!isUuid(id) || !isUuid(tenantId)) return false;
    const { rowCount } = await this.pool.query(
      `update auth.one_time_tokens t set revoked = pg_catalog.now() where t.id = $1 and t.purpose = $2 and t.tenant_id = $3 and ${LIVE}`,
      [id, purpose, tenantId],
    );
    return (rowCount ?? 0) > 0;
  }

  async revokeAll(purpose: OneTimeTokenPurpose, subject: { userId: string } | { email: string; tenantId: string }): Promise<number> {
    const live = 't.purpose = $1 and t.consumed is null and t.revoked is null';
    const revoke = 'update auth.one_time_tokens t set revoked = pg_catalog.now() where';
    let result;
    if ('userId' in subject) {
      if (!isUuid(subject.userId)) return 0;
      result = await this.pool.query(`${revoke} ${live} and t.user_id = $2`, [purpose, subject.userId]);
    } else {
      if (!isUuid(subject.tenantId)) return 0;
      result = await this.pool.query(`${revoke} ${live} and t.email = $2 and t.tenant_id = $3`, [purpose, subject.email, subject.tenantId]);
    }
    const { rowCount } = result;
    return rowCount ?? 0;
  }
}

/** What a one-time token changes in an account: its password, its verified address, its sessions. */
export class PgAccountSecrets implements AccountSecrets {
  constructor(private readonly pool: Queryable) {}

  async setPassword(userId: string, email: string, passwordHash: string): Promise<boolean> {
    if (!isUuid(userId)) return false;
    const { rowCount } = await this.pool.query(
      `insert into auth.credentials (user_id, method, secret)
       select u.id, 'password', $2 from users.users u
       where u.id = $1 and pg_catalog.lower(u.email) = pg_catalog.lower($3) and u.deleted is null
       on conflict (user_id) do update set method = 'password', secret = excluded.secret, updated = pg_catalog.now()`,
      [userId, passwordHash, email],
    );
    return (rowCount ?? 0) > 0;
  }

  async markEmailVerified(userId: string, email: string): Promise<boolean> {
    if (!isUuid(userId)) return false;
    const { rowCount } = await this.pool.query(
      `update users.users set email_verified = coalesce(email_verified, pg_catalog.now()), updated = pg_catalog.now()
       where id = $1 and pg_catalog.lower(email) = pg_catalog.lower($2) and deleted is null`,
      [userId, email],
    );
    return (rowCount ?? 0) > 0;
  }

  async createInvitedUser(input: { email: string; name: string | null }, tenantId: string): Promise<User> {
    try {
      return await inTransaction(this.pool, async (client) => {
        const { rows } = await client.query<UserRow>(
          `insert into users.users as u (email, name, email_verified) values ($1, $2, pg_catalog.now()) returning ${USER_COLUMNS}`,
          [input.email, input.name],
        );
        const linked = await client.query(
          `insert into users.tenant_users (tenant_id, user_id) select id, $2 from public.tenants where id = $1 and deleted is null`,
          [tenantId, rows[0].id],
        );
        if (linked.rowCount === 0) throw new NotFoundError('tenant_not_found', `Tenant '${tenantId}' not found`);
        return toUser(rows[0]);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_live')) {
        throw new ConflictError('email_taken', 'A user with this email already exists in this database', { cause: error });
      }
      throw error;
    }
  }

  async endSessions(userId: string, keepSessionId?: string): Promise<number> {
    if (!isUuid(userId)) return 0;
    const { rowCount } = await this.pool.query(
      `update auth.sessions set revoked = pg_catalog.now() where user_id = $1 and revoked is null and ($2::text is null or id <> $2::text)`,
      [userId, keepSessionId ?? null],
    );
    return rowCount ?? 0;
  }
}
