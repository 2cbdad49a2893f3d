import type { MikroORM } from '@mikro-orm/postgresql';
import type { AuthorizationCodeGrant, CodeRedemption, GrantStore, RefreshTokenRecord, TokenFamily } from '@platform/domain';

interface FamilyRow {
  id: string;
  client_id: string;
  developer_id: string;
  workspace_id: string | null;
  scope: string;
  created: Date | string;
  revoked: Date | string | null;
}

const scopesOf = (text: string) => text.split(' ').filter(Boolean);
const dateOrNull = (value: Date | string | null) => (value === null ? null : new Date(value));

function toFamily(row: FamilyRow): TokenFamily {
  return {
    id: row.id,
    clientId: row.client_id,
    developerId: row.developer_id,
    workspaceId: row.workspace_id,
    scopes: scopesOf(row.scope),
    created: new Date(row.created),
    revoked: dateOrNull(row.revoked),
  };
}

/**
 * Codes, refresh tokens and their families in the control plane, in raw SQL over the ORM's
 * connection (no entities): each step that must happen once (spending a code, rotating a refresh
 * token) is one conditional statement, so concurrent requests cannot both succeed.
 */
export class SqlGrantStore implements GrantStore {
  constructor(private readonly orm: MikroORM) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async saveCode(digest: string, grant: AuthorizationCodeGrant, now: Date): Promise<void> {
    await this.execute(
      `insert into authorization_codes
         (digest, client_id, developer_id, workspace_id, redirect_uri, code_challenge, scope, created, expires)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [digest, grant.clientId, grant.developerId, grant.workspaceId, grant.redirectUri, grant.codeChallenge, grant.scopes.join(' '), now, grant.expires],
    );
  }

  async redeemCode(digest: string, clientId: string, familyId: string, now: Date): Promise<CodeRedemption> {
    const rows = await this.execute<{
      developer_id: string;
      workspace_id: string | null;
      redirect_uri: string;
      code_challenge: string;
      scope: string;
      expires: Date | string;
    }>(
      `with spent as (
         update authorization_codes set used = ?, family_id = ?
         where digest = ? and client_id = ? and used is null and expires > ?
         returning *
       ), family as (
         insert into token_families (id, client_id, developer_id, workspace_id, scope, created)
         select family_id, client_id, developer_id, workspace_id, scope, used from spent
       )
       select * from spent`,
      [now, familyId, digest, clientId, now],
    );
    if (rows.length === 1) {
      const row = rows[0];
      return {
        outcome: 'redeemed',
        familyId,
        grant: {
          clientId,
          developerId: row.developer_id,
          workspaceId: row.workspace_id,
          redirectUri: row.redirect_uri,
          codeChallenge: row.code_challenge,
          scopes: scopesOf(row.scope),
          expires: new Date(row.expires),
        },
      };
    }
    const prior = await this.execute<{ used: Date | null; family_id: string | null }>(
      `select used, family_id from authorization_codes where digest = ? and client_id = ?`,
      [digest, clientId],
    );
    if (prior.length === 1 && prior[0].used !== null) return { outcome: 'replayed', familyId: prior[0].family_id };
    return { outcome: 'invalid' };
  }

  async saveRefreshToken(digest: string, input: { familyId: string; scopes: string[]; now: Date; expires: Date }): Promise<void> {
    await this.execute(`insert into refresh_tokens (digest, family_id, scope, created, expires) values (?, ?, ?, ?, ?)`, [
      digest,
      input.familyId,
      input.scopes.join(' '),
      input.now,
      input.expires,
    ]);
  }

  async findRefreshToken(digest: string): Promise<RefreshTokenRecord | null> {
    const rows = await this.execute<FamilyRow & { token_scope: string; token_created: Date | string; expires: Date | string; used: Date | string | null }>(
      `select f.*, t.scope as token_scope, t.created as token_created, t.expires, t.used
       from refresh_tokens t join token_families f on f.id = t.family_id
       where t.digest = ?`,
      [digest],
    );
    if (rows.length === 0) return null;
    const row = rows[0];
    return {
      family: toFamily(row),
      scopes: scopesOf(row.token_scope),
      created: new Date(row.token_created),
      expires: new Date(row.expires),
      used: dateOrNull(row.used),
    };
  }

  async useRefreshToken(digest: string, now: Date): Promise<boolean> {
    const rows = await this.execute(`update refresh_tokens set used = ? where digest = ? and used is null returning digest`, [now, digest]);
    return rows.length === 1;
  }

  async findFamily(id: string): Promise<TokenFamily | null> {
    const rows = await this.execute<FamilyRow>(`select * from token_families where id = ?`, [id]);
    return rows.length === 0 ? null : toFamily(rows[0]);
  }

  /**
   * Deletes what can no longer matter: codes an hour past expiry, and families whose every
   * refresh token expired over a day ago (their access tokens expired long before). Spent
   * refresh tokens of live families stay: a replay of one must still be recognised.
   */
  async purge(now: Date): Promise<{ codes: number; families: number }> {
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const dayAgo = new Date(now.getTime() - 86_400_000);
    const codes = await this.execute(`delete from authorization_codes where expires < ? returning 1`, [hourAgo]);
    const families = await this.execute(
      `delete from token_families f
        where f.created < ?
          and not exists (select 1 from refresh_tokens t where t.family_id = f.id and t.expires >= ?)
       returning 1`,
      [dayAgo, dayAgo],
    );
    return { codes: codes.length, families: families.length };
  }

  async revokeFamily(id: string): Promise<void> {
    // Stamped by the database's clock, the one PolledRevocationList compares against.
    await this.execute(`update token_families set revoked = now() where id = ? and revoked is null`, [id]);
  }
}
