import { Migration } from '@mikro-orm/migrations';

/**
 * Single sign-on: each tenant's OpenID Providers, and the sign-ins gone to a provider and not back
 * yet. A registration's client secret is kept only sealed (AES-256-GCM under SSO_SECRET_KEYS, bound
 * to the row's id). A pending sign-in is found by its state's SHA-256 and holds the SHA-256 of the
 * browser's cookie: the table holds nothing a browser could replay.
 */
export class Migration20261122100000_sso extends Migration {
  override up(): void {
    this.addSql(`
      create table sso_registrations (
        id uuid primary key,
        database_id uuid not null references databases (id) on delete cascade,
        tenant_id uuid not null,
        provider text not null,
        config_url text not null,
        metadata jsonb not null,
        client_id text not null,
        sealed_secret text not null,
        email_domains text[] not null,
        enabled boolean not null,
        redirect_uri text not null,
        jit_provisioning boolean not null,
        created timestamptz not null default now(),
        updated timestamptz not null default now(),
        unique (database_id, tenant_id, provider)
      )`);
    this.addSql(`
      create table sso_login_states (
        state_digest bytea primary key,
        browser_digest bytea not null,
        registration_id uuid not null references sso_registrations (id) on delete cascade,
        database_id uuid not null,
        tenant_id uuid not null,
        nonce text not null,
        code_verifier text not null,
        callback_url text not null,
        link_user_id uuid,
        expires timestamptz not null
      )`);
    this.addSql(`create index sso_login_states_expires on sso_login_states (expires)`);
  }

  override down(): void {
    this.addSql('drop table if exists sso_login_states');
    this.addSql('drop table if exists sso_registrations');
  }
}
