import type { MikroORM } from '@mikro-orm/postgresql';
import type { AuthSettingsStore, StoredAuthSettings } from '@platform/domain';
import { isForeignKeyViolation } from '../errors.js';

/** Each database's auth settings (database_auth_settings), read on every request that needs them: no cache, a change holds at once on every replica. */
export class SqlAuthSettings implements AuthSettingsStore {
  constructor(private readonly orm: MikroORM) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async find(databaseId: string): Promise<StoredAuthSettings | null> {
    const [row] = await this.execute<{ self_sign_up: boolean | null; app_origins: string[] }>(
      `select self_sign_up, app_origins from database_auth_settings where database_id = ?`,
      [databaseId],
    );
    return row ? { selfSignUp: row.self_sign_up, appOrigins: row.app_origins } : null;
  }

  async update(databaseId: string, patch: Partial<StoredAuthSettings>): Promise<boolean> {
    const setsSignUp = patch.selfSignUp !== undefined;
    const setsOrigins = patch.appOrigins !== undefined;
    try {
      await this.write(databaseId, patch, setsSignUp, setsOrigins);
      return true;
    } catch (error) {
      // The database was purged after the caller found it: its row is gone, and so are its settings.
      if (isForeignKeyViolation(error, 'database_auth_settings_database_id_fkey')) return false;
      throw error;
    }
  }

  private async write(databaseId: string, patch: Partial<StoredAuthSettings>, setsSignUp: boolean, setsOrigins: boolean): Promise<void> {
    await this.execute(
      `insert into database_auth_settings (database_id, self_sign_up, app_origins, updated)
       values (?, ?::boolean, array(select jsonb_array_elements_text(?::jsonb)), now())
       on conflict (database_id) do update set
         self_sign_up = case when ? then excluded.self_sign_up else database_auth_settings.self_sign_up end,
         app_origins = case when ? then excluded.app_origins else database_auth_settings.app_origins end,
         updated = excluded.updated`,
      // The origins travel as one JSON array: a driver would spread a bound list.
      [databaseId, patch.selfSignUp ?? null, JSON.stringify(patch.appOrigins ?? []), setsSignUp, setsOrigins],
    );
  }
}
