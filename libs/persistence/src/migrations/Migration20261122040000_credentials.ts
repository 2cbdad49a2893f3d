import { Migration } from '@mikro-orm/migrations';

/**
 * Credentials: PostgreSQL login roles on the clusters, recorded here by role name (at most 63
 * bytes, PostgreSQL's limit). Their passwords are never stored: the cluster keeps a SCRAM verifier.
 */
export class Migration20261122040000_credentials extends Migration {
  override up(): void {
    this.addSql(`
      create table credentials (
        id varchar(63) primary key,
        database_id uuid not null references databases (id) on delete cascade,
        tenant_id uuid,
        internal boolean not null default false,
        created timestamptz not null,
        deleted timestamptz
      )`);
    this.addSql(`create index credentials_database_live on credentials (database_id, created) where deleted is null`);
  }

  override down(): void {
    this.addSql('drop table if exists credentials');
  }
}
