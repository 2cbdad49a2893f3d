import { Migration } from '@mikro-orm/migrations';

/**
 * What the authorization_code and refresh_token grants need: developer passwords, first-party
 * clients (no workspace), one-time codes, refresh-token families and their tokens. Codes and
 * refresh tokens are stored as SHA-256 digests only: the control plane never holds a usable one.
 */
export class Migration20261122020000_grants extends Migration {
  override up(): void {
    this.addSql(`alter table developers add column password_hash text`);
    // A first-party client belongs to the platform, not to a workspace: its tokens reach every
    // workspace of the developer who signed in.
    this.addSql(`alter table oauth_clients alter column workspace_id drop not null`);
    this.addSql(`
      insert into oauth_clients (id, workspace_id, name, type, secret_digest, redirect_uris, created)
      values ('platform-cli', null, 'Platform command line', 'public', null,
              '["http://127.0.0.1/callback", "http://[::1]/callback"]', now())
      on conflict (id) do nothing`);
    this.addSql(`
      create table token_families (
        id uuid primary key,
        client_id varchar(64) not null references oauth_clients (id),
        developer_id uuid not null references developers (id) on delete cascade,
        workspace_id uuid references workspaces (id) on delete cascade,
        scope text not null,
        created timestamptz not null,
        revoked timestamptz
      )`);
    // apps/api polls for families revoked since its last look.
    this.addSql(`create index token_families_revoked on token_families (revoked) where revoked is not null`);
    this.addSql(`create index token_families_client on token_families (client_id) where revoked is null`);
    this.addSql(`
      create table authorization_codes (
        digest varchar(64) primary key,
        client_id varchar(64) not null references oauth_clients (id),
        developer_id uuid not null references developers (id) on delete cascade,
        workspace_id uuid references workspaces (id) on delete cascade,
        redirect_uri text not null,
        code_challenge varchar(128) not null,
        scope text not null,
        created timestamptz not null,
        expires timestamptz not null,
        used timestamptz,
        family_id uuid references token_families (id) on delete set null
      )`);
    this.addSql(`create index authorization_codes_expires on authorization_codes (expires)`);
    this.addSql(`
      create table refresh_tokens (
        digest varchar(64) primary key,
        family_id uuid not null references token_families (id) on delete cascade,
        scope text not null,
        created timestamptz not null,
        expires timestamptz not null,
        used timestamptz
      )`);
    this.addSql(`create index refresh_tokens_family on refresh_tokens (family_id)`);
  }

  override down(): void {
    this.addSql('drop table if exists refresh_tokens');
    this.addSql('drop table if exists authorization_codes');
    this.addSql('drop table if exists token_families');
    this.addSql(`delete from oauth_clients where workspace_id is null`);
    this.addSql('alter table oauth_clients alter column workspace_id set not null');
    this.addSql('alter table developers drop column password_hash');
  }
}
