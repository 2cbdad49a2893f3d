import { ConflictError, NotFoundError, pageOf, type ExternalIdentity, type MemberReader, type Page, type PageRequest, type NewIdentityUser, type NewUser, type User, type UserPatch, type UserRepository } from '@platform/domain';
import { inTenantContext, inTransaction, isUniqueViolation, type Queryable } from './queryable.js';
import { positionOf } from './page-position.js';
import { USER_COLUMNS, toUser, type UserRow } from './rows.js';
import { LIVE_SESSION } from './session.repository.js';

const PATCHABLE: Record<keyof UserPatch, string> = {
  name: 'name',
  givenName: 'given_name',
  familyName: 'family_name',
  picture: 'picture',
};

export class PgUserRepository implements UserRepository {
  constructor(private readonly pool: Queryable) {}

  create(input: NewUser, tenantId?: string): Promise<User> {
    return this.insertUser(input, tenantId, async (client, userId) => {
      await client.query(`insert into auth.credentials (user_id, method, secret) values ($1, 'password', $2)`, [userId, input.passwordHash]);
    });
  }

  createWithIdentity(input: NewIdentityUser, identity: ExternalIdentity, tenantId: string): Promise<User> {
    return this.insertUser(input, tenantId, (client, userId) => this.insertIdentity(client, userId, identity));
  }

  /** Creates a user, how they sign in (`signInWith`) and their membership, in one transaction. */
  private async insertUser(
    input: UserPatch & { email: string; emailVerified?: Date },
    tenantId: string | undefined,
    signInWith: (client: Pick<Queryable, 'query'>, userId: string) => Promise<void>,
  ): Promise<User> {
    try {
      return await inTransaction(this.pool, async (client) => {
        const { rows } = await client.query<UserRow>(
          `insert into users.users as u (email, name, given_name, family_name, picture, email_verified)
           values ($1, $2, $3, $4, $5, $6) returning ${USER_COLUMNS}`,
          [input.email, input.name ?? null, input.givenName ?? null, input.familyName ?? null, input.picture ?? null, input.emailVerified ?? null],
        );
        const user = toUser(rows[0]);
        await signInWith(client, user.id);
        if (tenantId !== undefined) {
          const linked = await client.query(
            `insert into users.tenant_users (tenant_id, user_id)
             select id, $2 from public.tenants where id = $1 and deleted is null`,
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

  /**
   * Links the identity to the user. A link left by a deleted user is taken over; one of another
   * live user is refused (identity_taken), as is a user who is gone.
   */
  private async insertIdentity(client: Pick<Queryable, 'query'>, userId: string, identity: ExternalIdentity): Promise<void> {
    const result = await client.query(
      `insert into auth.identities as i (issuer, subject, user_id)
       select $1, $2, u.id from users.users u where u.id = $3 and u.deleted is null
       on conflict (issuer, subject) do update set user_id = excluded.user_id, created = now()
         where i.user_id = excluded.user_id
            or not exists (select 1 from users.users o where o.id = i.user_id and o.deleted is null)`,
      [identity.issuer, identity.subject, userId],
    );
    if (result.rowCount === 0) throw new ConflictError('identity_taken', 'This account at the provider is linked to another user');
  }

  async linkIdentity(userId: string, identity: ExternalIdentity): Promise<void> {
    await this.insertIdentity(this.pool, userId, identity);
  }

  async findByIdentity(identity: ExternalIdentity): Promise<User | null> {
    const { rows } = await this.pool.query<UserRow>(
      `select ${USER_COLUMNS} from auth.identities i join users.users u on u.id = i.user_id and u.deleted is null
       where i.issuer = $1 and i.subject = $2`,
      [identity.issuer, identity.subject],
    );
    return rows[0] ? toUser(rows[0]) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const { rows } = await this.pool.query<UserRow>(
      `select ${USER_COLUMNS} from users.users u where lower(u.email) = lower($1::text) and u.deleted is null`,
      [email],
    );
    return rows[0] ? toUser(rows[0]) : null;
  }

  async find(id: string): Promise<User | null> {
    const { rows } = await this.pool.query<UserRow>(`select ${USER_COLUMNS} from users.users u where u.id = $1 and u.deleted is null`, [id]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async findCredentials(email: string): Promise<{ user: User; passwordHash: string } | null> {
    const { rows } = await this.pool.query<UserRow & { secret: string }>(
      `select ${USER_COLUMNS}, c.secret from users.users u
       join auth.credentials c on c.user_id = u.id and c.method = 'password'
       where lower(u.email) = lower($1::text) and u.deleted is null`,
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

  async listMembersPage(tenantId: string, page: PageRequest, as: MemberReader): Promise<Page<User>> {
    const after = await positionOf(this.pool, 'users.users', page.afterId);
    const read = async (client: Pick<Queryable, 'query'>) => {
      // tu.user_created is u.created (built-in schema step 8): its index gives the order.
      const { rows } = await client.query<UserRow>(
        `select ${USER_COLUMNS} from users.tenant_users tu join users.users u on u.id = tu.user_id
         where tu.tenant_id = $1 and u.deleted is null
           and ($2::timestamptz is null or (tu.user_created, tu.user_id) > ($2::timestamptz, $3::uuid))
         order by tu.user_created, tu.user_id limit $4`,
        [tenantId, after?.created ?? null, after?.id ?? null, page.limit + 1],
      );
      return pageOf(rows.map(toUser), page);
    };
    // Administration reads as the service role (BYPASSRLS), in one statement: no policy runs per
    // row. A member's read is isolated twice, by the filter and by row-level security.
    return as === 'administration' ? read(this.pool) : inTenantContext(this.pool, tenantId, read);
  }

  async tenantIds(userId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `select t.id from users.tenant_users tu join public.tenants t on t.id = tu.tenant_id and t.deleted is null
       where tu.user_id = $1 order by t.created, t.id`,
      [userId],
    );
    return rows.map((row) => row.id);
  }

  async link(tenantId: string, userId: string): Promise<boolean> {
    const result = await this.pool.query(
      `insert into users.tenant_users (tenant_id, user_id)
       select t.id, u.id from public.tenants t, users.users u
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

  async delete(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const result = await client.query('update users.users set deleted = now(), updated = now() where id = $1 and deleted is null', [id]);
      if ((result.rowCount ?? 0) === 0) return false;
      await client.query('delete from users.tenant_users where user_id = $1', [id]);
      await client.query('update auth.sessions set revoked = now() where user_id = $1 and revoked is null', [id]);
      return true;
    });
  }

  async shareTenant(userId: string, otherUserId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ shared: boolean }>(
      `select exists (
         select 1 from users.tenant_users a
         join users.tenant_users b on b.tenant_id = a.tenant_id
         join public.tenants t on t.id = a.tenant_id and t.deleted is null
         where a.user_id = $1 and b.user_id = $2) as shared`,
      [userId, otherUserId],
    );
    return rows[0].shared;
  }

  async access(userId: string, sessionId: string, tenantId: string): Promise<{ sessionValid: boolean; member: boolean }> {
    const { rows } = await this.pool.query<{ session_valid: boolean; member: boolean }>(
      `select ${LIVE_SESSION} as session_valid,
              exists (select 1 from users.tenant_users tu join public.tenants t on t.id = tu.tenant_id and t.deleted is null
                      where tu.user_id = $1 and tu.tenant_id = $3) as member`,
      [userId, sessionId, tenantId],
    );
    return { sessionValid: rows[0].session_valid, member: rows[0].member };
  }
}
