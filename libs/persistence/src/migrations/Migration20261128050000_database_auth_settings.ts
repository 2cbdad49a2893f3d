import { Migration } from '@mikro-orm/migrations';

/**
 * Each database's settings for the API family's auth API (issue 29): whether anyone may sign up
 * (null: the platform default, SELF_SIGN_UP) and the origins of its own apps, where mailed token
 * links may point. A database without a row has the defaults; its row goes with it when purged.
 */
export class Migration20261128050000_database_auth_settings extends Migration {
  override up(): void {
    this.addSql(`
      create table database_auth_settings (
        database_id uuid primary key references databases (id) on delete cascade,
        self_sign_up boolean,
        app_origins text[] not null default '{}',
        updated timestamptz not null default now()
      )`);
  }

  override down(): void {
    this.addSql('drop table if exists database_auth_settings');
  }
}
