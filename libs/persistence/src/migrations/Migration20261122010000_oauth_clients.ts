import { Migration } from '@mikro-orm/migrations';

/** OAuth clients of workspaces. A confidential client's secret is kept only as its SHA-256 digest. */
export class Migration20261122010000_oauth_clients extends Migration {
  override up(): void {
    this.addSql(`
      create table oauth_clients (
        id varchar(64) primary key,
        workspace_id uuid not null references workspaces (id) on delete cascade,
        name varchar(255) not null,
        type text not null check (type in ('confidential', 'public')),
        secret_digest varchar(64),
        redirect_uris jsonb not null default '[]',
        created_by uuid references developers (id) on delete set null,
        created timestamptz not null,
        secret_rotated timestamptz,
        deleted timestamptz,
        check ((type = 'confidential') = (secret_digest is not null))
      )`);
    this.addSql(`create index oauth_clients_workspace on oauth_clients (workspace_id, created) where deleted is null`);
  }

  override down(): void {
    this.addSql('drop table if exists oauth_clients');
  }
}
