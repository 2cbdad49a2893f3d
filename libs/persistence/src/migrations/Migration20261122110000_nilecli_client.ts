import { Migration } from '@mikro-orm/migrations';

/**
 * The first-party public client of the API family's command line tool: it opens
 * `/authorize?client_id=nilecli` with PKCE S256 and `redirect_uri=http://localhost:<port>/callback`.
 * Loopback redirects registered without a port match any port (RFC 8252 section 7.3), as for
 * `platform-cli`; this client also has the `localhost` spelling (RFC 8252 prefers IP literals,
 * which `platform-cli` keeps to), since that is what the tool sends.
 */
export class Migration20261122110000_nilecli_client extends Migration {
  override up(): void {
    this.addSql(`
      insert into oauth_clients (id, workspace_id, name, type, secret_digest, redirect_uris, created)
      values ('nilecli', null, 'Nile command line', 'public', null,
              '["http://localhost/callback", "http://127.0.0.1/callback", "http://[::1]/callback"]', now())
      on conflict (id) do nothing`);
  }

  override down(): void {
    this.addSql(`delete from oauth_clients where id = 'nilecli'`);
  }
}
