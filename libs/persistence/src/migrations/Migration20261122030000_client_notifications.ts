import { Migration } from '@mikro-orm/migrations';

/**
 * Every change to a client (a new secret, a deletion, a new client) is announced on the channel
 * `oauth_client_changed` when it commits, so token-service replicas drop what they cached of it.
 */
export class Migration20261122030000_client_notifications extends Migration {
  override up(): void {
    this.addSql(`
      create function oauth_client_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify('oauth_client_changed', coalesce(new.id, old.id));
        return null;
      end
      $$`);
    this.addSql(`
      create trigger oauth_clients_changed after insert or update or delete on oauth_clients
      for each row execute function oauth_client_changed()`);
  }

  override down(): void {
    this.addSql('drop trigger if exists oauth_clients_changed on oauth_clients');
    this.addSql('drop function if exists oauth_client_changed()');
  }
}
