import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  ConflictError,
  NotFoundError,
  UnavailableError,
  type DataPlane,
  type DataPlaneRepositories,
  type Database,
  type NewUser,
  type SessionRepository,
  type Tenant,
  type TenantRepository,
  type User,
  type UserPatch,
  type UserRepository,
} from '@platform/domain';
import type { DataPlanePools } from './pools.js';
import { TENANT_APP_ROLE, TENANT_CONTEXT_SETTING } from './tenant-context.js';
import { TENANT_COLUMNS, USER_COLUMNS, toTenant, toUser, type TenantRow, type UserRow } from './rows.js';

function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const { code, constraint: name } = error as { code?: string; constraint?: string };
  return code === '23505' && (constraint === undefined || name === constraint);
}

/** What the repositories need of a pool. */
interface Queryable {
  query<R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
  connect(): Promise<pg.PoolClient>;
}

/**
 * A database dropped while a cached path still led to it answers as a missing one; a server out
 * of connections, or a pool that waited too long for one, as busy (503) rather than broken.
 */
function translate(error: unknown): never {
  const { code, message } = error as { code?: string; message?: string };
  if (code === '3D000') throw new NotFoundError('database_not_found', 'Database not found');
  if (code === '53300' || /timeout exceeded when trying to connect/i.test(message ?? '')) {
    throw new UnavailableError('database_busy', 'The database is busy; try again shortly', { cause: error });
  }
  throw error;
}

/** Looks the pool up on every call: a pool evicted between two queries of a request is replaced, never reused. */
function guard(pool: () => pg.Pool): Queryable {
  return {
    query: <R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]) =>
      (typeof text === 'string' ? pool().query<R>(text, values) : pool().query<R>(text)).catch(translate),
    connect: () => pool().connect().catch(translate),
  };
}

async function inTransaction<T>(pool: Queryable, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Runs `fn` in one tenant's context: as the role row-level security applies to, with the tenant
 * setting set for this transaction only (SET LOCAL), so a pooled connection never carries a
 * tenant into its next use.
 */
async function inTenantContext<T>(pool: Queryable, tenantId: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(pool, async (client) => {
    await client.query(`set local role ${TENANT_APP_ROLE}`);
    await client.query('select set_config($1, $2, true)', [TENANT_CONTEXT_SETTING, tenantId]);
    return fn(client);
  });
}

/** A session's id is the digest of its cookie token: the database never holds a usable token. */
export function sessionIdOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

const LIVE_SESSION = `exists (
  select 1 from auth.sessions s join users.users su on su.id = s.user_id and su.deleted is null
  where s.id = $2 and s.user_id = $1 and s.revoked is null and s.expires > now())`;

const LIST_FOR_USER = `select live.ok as session_valid, ${TENANT_COLUMNS}
  from (select ${LIVE_SESSION} as ok) live
  left join (users.tenant_users tu join tenants t on t.id = tu.tenant_id and t.deleted is null)
    on live.ok and tu.user_id = $1
  order by t.created, t.id`;

class PgTenantRepository implements TenantRepository {
  constructor(private readonly pool: Queryable) {}

  async create(input: { id?: string; name: string | null }): Promise<Tenant> {
    try {
      const { rows } = await this.pool.query<TenantRow>(
        `insert into tenants as t (id, name) values (coalesce($1::uuid, gen_random_uuid()), $2) returning ${TENANT_COLUMNS}`,
        [input.id ?? null, input.name],
      );
      return toTenant(rows[0]);
    } catch (error) {
      if (isUniqueViolation(error, 'tenants_pkey')) {
        throw new ConflictError('tenant_id_taken', `A tenant with id '${input.id}' already exists`, { cause: error });
      }
      throw error;
    }
  }

  async list(): Promise<Tenant[]> {
    const { rows } = await this.pool.query<TenantRow>(`select ${TENANT_COLUMNS} from tenants t where t.deleted is null order by t.created, t.id`);
    return rows.map(toTenant);
  }

  async listForUser(userId: string, sessionId: string): Promise<{ sessionValid: boolean; tenants: Tenant[] }> {
    // The hot path of a user's reads: a named statement is planned once per connection.
    const { rows } = await this.pool.query<TenantRow & { session_valid: boolean }>({
      name: 'tenants_for_user',
      text: LIST_FOR_USER,
      values: [userId, sessionId],
    });
    const sessionValid = rows[0]?.session_valid === true;
    return { sessionValid, tenants: sessionValid ? rows.filter((row) => row.id !== null).map(toTenant) : [] };
  }

  async find(id: string): Promise<Tenant | null> {
    const { rows } = await this.pool.query<TenantRow>(`select ${TENANT_COLUMNS} from tenants t where t.id = $1 and t.deleted is null`, [id]);
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async rename(id: string, name: string | null): Promise<Tenant | null> {
    const { rows } = await this.pool.query<TenantRow>(
      `update tenants t set name = $2, updated = now() where t.id = $1 and t.deleted is null returning ${TENANT_COLUMNS}`,
      [id, name],
    );
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const updated = await client.query('update tenants set deleted = now(), updated = now() where id = $1 and deleted is null', [id]);
      if (updated.rowCount === 0) return false;
      await client.query('delete from users.tenant_users where tenant_id = $1', [id]);
      return true;
    });
  }
}

const PATCHABLE: Record<keyof UserPatch, string> = {
  name: 'name',
  givenName: 'given_name',
  familyName: 'family_name',
  picture: 'picture',
};

class PgUserRepository implements UserRepository {
  constructor(private readonly pool: Queryable) {}

  async create(input: NewUser, tenantId?: string): Promise<User> {
    try {
      return await inTransaction(this.pool, async (client) => {
        const { rows } = await client.query<UserRow>(
          `insert into users.users as u (email, name, given_name, family_name, picture)
           values ($1, $2, $3, $4, $5) returning ${USER_COLUMNS}`,
          [input.email, input.name ?? null, input.givenName ?? null, input.familyName ?? null, input.picture ?? null],
        );
        const user = toUser(rows[0]);
        await client.query(`insert into auth.credentials (user_id, method, secret) values ($1, 'password', $2)`, [user.id, input.passwordHash]);
        if (tenantId !== undefined) {
          const linked = await client.query(
            `insert into users.tenant_users (tenant_id, user_id)
             select id, $2 from tenants where id = $1 and deleted is null`,
            [tenantId, user.id],
          );
          if (linked.rowCount === 0) throw new NotFoundError('tenant_not_found', `Tenant '${tenantId}' not found`);
        }
        return user;
      });
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_live')) {
        throw new ConflictError('email_taken', 'A user with this email already exists in this database', { cause: error });
      }
      throw error;
    }
  }

  async find(id: string): Promise<User | null> {
    const { rows } = await this.pool.query<UserRow>(`select ${USER_COLUMNS} from users.users u where u.id = $1 and u.deleted is null`, [id]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async findCredentials(email: string): Promise<{ user: User; passwordHash: string } | null> {
    const { rows } = await this.pool.query<UserRow & { secret: string }>(
      `select ${USER_COLUMNS}, c.secret from users.users u
       join auth.credentials c on c.user_id = u.id and c.method = 'password'
       where lower(u.email) = lower($1) and u.deleted is null`,
      [email],
    );
    return rows[0] ? { user: toUser(rows[0]), passwordHash: rows[0].secret } : null;
  }

  async update(id: string, patch: UserPatch): Promise<User | null> {
    const sets: string[] = [];
    const values: unknown[] = [id];
    for (const [key, column] of Object.entries(PATCHABLE) as [keyof UserPatch, string][]) {
      if (patch[key] === undefined) continue;
      values.push(patch[key]);
      sets.push(`${column} = $${values.length}`);
    }
    const { rows } = await this.pool.query<UserRow>(
      `update users.users u set ${[...sets, 'updated = now()'].join(', ')} where u.id = $1 and u.deleted is null returning ${USER_COLUMNS}`,
      values,
    );
    return rows[0] ? toUser(rows[0]) : null;
  }

  async listMembers(tenantId: string): Promise<User[]> {
    // Isolated twice: by the filter, and by row-level security on users.tenant_users.
    return inTenantContext(this.pool, tenantId, async (client) => {
      const { rows } = await client.query<UserRow>(
        `select ${USER_COLUMNS} from users.users u join users.tenant_users tu on tu.user_id = u.id
         where tu.tenant_id = $1 and u.deleted is null order by u.created, u.id`,
        [tenantId],
      );
      return rows.map(toUser);
    });
  }

  async tenantIds(userId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `select t.id from users.tenant_users tu join tenants t on t.id = tu.tenant_id and t.deleted is null
       where tu.user_id = $1 order by t.created, t.id`,
      [userId],
    );
    return rows.map((row) => row.id);
  }

  async link(tenantId: string, userId: string): Promise<boolean> {
    const result = await this.pool.query(
      `insert into users.tenant_users (tenant_id, user_id)
       select t.id, u.id from tenants t, users.users u
       where t.id = $1 and t.deleted is null and u.id = $2 and u.deleted is null
       on conflict do nothing`,
      [tenantId, userId],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async unlink(tenantId: string, userId: string): Promise<boolean> {
    const result = await this.pool.query('delete from users.tenant_users where tenant_id = $1 and user_id = $2', [tenantId, userId]);
    return (result.rowCount ?? 0) > 0;
  }

  async shareTenant(userId: string, otherUserId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ shared: boolean }>(
      `select exists (
         select 1 from users.tenant_users a
         join users.tenant_users b on b.tenant_id = a.tenant_id
         join tenants t on t.id = a.tenant_id and t.deleted is null
         where a.user_id = $1 and b.user_id = $2) as shared`,
      [userId, otherUserId],
    );
    return rows[0].shared;
  }

  async access(userId: string, sessionId: string, tenantId: string): Promise<{ sessionValid: boolean; member: boolean }> {
    const { rows } = await this.pool.query<{ session_valid: boolean; member: boolean }>(
      `select ${LIVE_SESSION} as session_valid,
              exists (select 1 from users.tenant_users tu join tenants t on t.id = tu.tenant_id and t.deleted is null
                      where tu.user_id = $1 and tu.tenant_id = $3) as member`,
      [userId, sessionId, tenantId],
    );
    return { sessionValid: rows[0].session_valid, member: rows[0].member };
  }
}

class PgSessionRepository implements SessionRepository {
  constructor(private readonly pool: Queryable) {}

  async create(userId: string, ttlSeconds: number): Promise<{ id: string; token: string; expires: Date }> {
    const token = randomBytes(32).toString('base64url');
    const id = sessionIdOf(token);
    const { rows } = await this.pool.query<{ expires: Date }>(
      `insert into auth.sessions (id, user_id, expires) values ($1, $2, now() + make_interval(secs => $3)) returning expires`,
      [id, userId, ttlSeconds],
    );
    return { id, token, expires: rows[0].expires };
  }

  async findByToken(token: string): Promise<{ id: string; userId: string } | null> {
    const { rows } = await this.pool.query<{ id: string; user_id: string }>(
      `select s.id, s.user_id from auth.sessions s join users.users u on u.id = s.user_id and u.deleted is null
       where s.id = $1 and s.revoked is null and s.expires > now()`,
      [sessionIdOf(token)],
    );
    return rows[0] ? { id: rows[0].id, userId: rows[0].user_id } : null;
  }

  async isLive(id: string, userId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ live: boolean }>(`select ${LIVE_SESSION} as live`, [userId, id]);
    return rows[0].live;
  }

  async revoke(id: string): Promise<void> {
    await this.pool.query('update auth.sessions set revoked = now() where id = $1 and revoked is null', [id]);
  }
}

/** The built-in tables of each platform database, over a bounded pool per database. */
export class PgDataPlane implements DataPlane {
  constructor(
    private readonly pools: DataPlanePools,
    /** A URL (with credentials that may use the built-in tables) for a platform database. */
    private readonly urlFor: (database: Database) => string,
  ) {}

  open(database: Database): DataPlaneRepositories {
    const url = this.urlFor(database);
    const pool = guard(() => this.pools.pool(url));
    return {
      tenants: new PgTenantRepository(pool),
      users: new PgUserRepository(pool),
      sessions: new PgSessionRepository(pool),
    };
  }
}
