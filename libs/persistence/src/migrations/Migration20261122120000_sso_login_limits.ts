import { Migration } from '@mikro-orm/migrations';

/**
 * Pending SSO sign-ins: a link names the session that asked for it (it must still be live when the
 * provider sends the browser back), and each counts against its client's address (SHA-256 of the
 * address or IPv6 /64), so anonymous login requests cannot fill the table.
 */
export class Migration20261122120000_sso_login_limits extends Migration {
  override up(): void {
    // Sign-ins under way when this runs are forgotten: they carry no address (the user starts again).
    this.addSql(`delete from sso_login_states`);
    this.addSql(`alter table sso_login_states add column link_session_id text, add column address_digest bytea not null`);
    this.addSql(`create index sso_login_states_address on sso_login_states (address_digest, expires)`);
  }

  override down(): void {
    this.addSql(`drop index if exists sso_login_states_address`);
    this.addSql(`alter table sso_login_states drop column address_digest, drop column link_session_id`);
  }
}
