import { createHash, randomBytes } from 'node:crypto';
import type { SessionRepository } from '@platform/domain';
import type { Queryable } from './queryable.js';

/** A session's id is the digest of its cookie token: the database never holds a usable token. */
function sessionIdOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** True for a live session of a live user; parameters $1 the user's id, $2 the session's id. */
export const LIVE_SESSION = `exists (
  select 1 from auth.sessions s join users.users su on su.id = s.user_id and su.deleted is null
  where s.id = $2 and s.user_id = $1 and s.revoked is null and s.expires > now())`;

export class PgSessionRepository implements SessionRepository {
  constructor(private readonly pool: Queryable) {}

  async create(userId: string, ttlSeconds: number): Promise<{ id: string; token: string; expires: Date }> {
    const token = randomBytes(32).toString('base64url');
    const id = sessionIdOf(token);
    const { rows } = await this.pool.query<{ expires: Date }>(
      `insert into auth.sessions (id, user_id, expires) values ($1, $2, now() + pg_catalog.make_interval(secs => $3::float8)) returning expires`,
      [id, userId, ttlSeconds],
    );
    return { id, token, expires: rows[0].expires };
  }

  async findByToken(token: string): Promise<{ id: string; userId: string; expires: Date } | null> {
    const { rows } = await this.pool.query<{ id: string; user_id: string; expires: Date }>(
      `select s.id, s.user_id, s.expires from auth.sessions s join users.users u on u.id = s.user_id and u.deleted is null
       where s.id = $1 and s.revoked is null and s.expires > now()`,
      [sessionIdOf(token)],
    );
    return rows[0] ? { id: rows[0].id, userId: rows[0].user_id, expires: rows[0].expires } : null;
  }

  async isLive(id: string, userId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ live: boolean }>(`select ${LIVE_SESSION} as live`, [userId, id]);
    return rows[0].live;
  }

  async revoke(id: string): Promise<void> {
    await this.pool.query('update auth.sessions set revoked = now() where id = $1 and revoked is null', [id]);
  }
}
