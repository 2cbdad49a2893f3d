import { ConflictError, pageOf, type Page, type PageRequest, type Tenant, type TenantRepository } from '@platform/domain';
import { positionOf } from './page-position.js';
import { isUniqueViolation, inTransaction, type Queryable } from './queryable.js';
import { TENANT_COLUMNS, toTenant, type TenantRow } from './rows.js';
import { LIVE_SESSION } from './session.repository.js';

const LIST_FOR_USER = `select live.ok as session_valid, ${TENANT_COLUMNS}
  from (select ${LIVE_SESSION} as ok) live
  left join (users.tenant_users tu join public.tenants t on t.id = tu.tenant_id and t.deleted is null)
    on live.ok and tu.user_id = $1
  order by t.created, t.id`;

export class PgTenantRepository implements TenantRepository {
  constructor(private readonly pool: Queryable) {}

  async create(input: { id?: string; name: string | null }): Promise<Tenant> {
    try {
      const { rows } = await this.pool.query<TenantRow>(
        `insert into public.tenants as t (id, name) values (coalesce($1::uuid, gen_random_uuid()), $2) returning ${TENANT_COLUMNS}`,
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
    const { rows } = await this.pool.query<TenantRow>(`select ${TENANT_COLUMNS} from public.tenants t where t.deleted is null order by t.created, t.id`);
    return rows.map(toTenant);
  }

  async listPage(page: PageRequest): Promise<Page<Tenant>> {
    const after = await positionOf(this.pool, 'public.tenants', page.afterId);
    const { rows } = await this.pool.query<TenantRow>(
      `select ${TENANT_COLUMNS} from public.tenants t
       where t.deleted is null and ($1::timestamptz is null or (t.created, t.id) > ($1::timestamptz, $2::uuid))
       order by t.created, t.id limit $3`,
      [after?.created ?? null, after?.id ?? null, page.limit + 1],
    );
    return pageOf(rows.map(toTenant), page);
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
    const { rows } = await this.pool.query<TenantRow>(`select ${TENANT_COLUMNS} from public.tenants t where t.id = $1 and t.deleted is null`, [id]);
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async rename(id: string, name: string | null): Promise<Tenant | null> {
    const { rows } = await this.pool.query<TenantRow>(
      `update public.tenants t set name = $2, updated = now() where t.id = $1 and t.deleted is null returning ${TENANT_COLUMNS}`,
      [id, name],
    );
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const updated = await client.query('update public.tenants set deleted = now(), updated = now() where id = $1 and deleted is null', [id]);
      if (updated.rowCount === 0) return false;
      await client.query('delete from users.tenant_users where tenant_id = $1', [id]);
      return true;
    });
  }
}
