import { Migration } from '@mikro-orm/migrations';

/**
 * Customer credentials are login roles on the same cluster as (by default) the control plane:
 * PUBLIC keeps no CONNECT or TEMPORARY on the control plane's database, so only the platform's own
 * role, which owns it, connects.
 */
export class Migration20261122050000_private_control_plane extends Migration {
  override up(): void {
    this.addSql(`do $$ begin execute format('revoke connect, temporary on database %I from public', current_database()); end $$`);
  }

  override down(): void {
    this.addSql(`do $$ begin execute format('grant connect, temporary on database %I to public', current_database()); end $$`);
  }
}
