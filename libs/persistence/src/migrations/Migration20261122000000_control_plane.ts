import { Migration } from '@mikro-orm/migrations';

/** The control plane's first schema: developers, workspaces, databases and signing keys. */
export class Migration20261122000000_control_plane extends Migration {
  override up(): void {
    this.addSql(`
      create table developers (
        id uuid primary key,
        email varchar(320) not null,
        name varchar(255),
        created timestamptz not null
      )`);
    this.addSql(`create unique index developers_email_unique on developers (lower(email))`);
    this.addSql(`
      create table workspaces (
        id uuid primary key,
        name varchar(255) not null,
        slug varchar(255) not null constraint workspaces_slug_unique unique,
        billing_customer_id varchar(255),
        created timestamptz not null
      )`);
    this.addSql(`
      create table workspace_members (
        workspace_id uuid not null references workspaces (id) on delete cascade,
        developer_id uuid not null references developers (id) on delete cascade,
        role varchar(255) not null,
        created timestamptz not null,
        primary key (workspace_id, developer_id)
      )`);
    this.addSql(`create index workspace_members_developer on workspace_members (developer_id)`);
    this.addSql(`
      create table databases (
        id uuid primary key,
        workspace_id uuid not null references workspaces (id) on delete restrict,
        name varchar(255) not null,
        region text not null check (region in ('AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS')),
        status text not null check (status in ('PENDING', 'REQUESTED', 'BUILT', 'POOLED', 'READY')),
        physical_name varchar(255) not null constraint databases_physical_name_unique unique,
        created timestamptz not null,
        updated timestamptz not null,
        deleted timestamptz,
        dropped timestamptz,
        last_error text,
        attempts int not null default 0,
        next_attempt_at timestamptz
      )`);
    // Names are unique among a workspace's live databases; a deleted one frees its name.
    this.addSql(`create unique index databases_workspace_name_live on databases (workspace_id, name) where deleted is null`);
    // What the provisioner scans for: live databases short of READY, deleted ones not yet dropped.
    this.addSql(`
      create index databases_needing_work on databases (created)
      where (deleted is null and status in ('PENDING', 'REQUESTED', 'BUILT', 'POOLED'))
         or (deleted is not null and dropped is null)`);
    this.addSql(`
      create table signing_keys (
        kid varchar(255) primary key,
        alg varchar(255) not null,
        public_jwk jsonb not null,
        private_jwk jsonb not null,
        created timestamptz not null,
        retires timestamptz,
        expires timestamptz
      )`);
  }

  override down(): void {
    this.addSql('drop table if exists signing_keys');
    this.addSql('drop table if exists databases');
    this.addSql('drop table if exists workspace_members');
    this.addSql('drop table if exists workspaces');
    this.addSql('drop table if exists developers');
  }
}
