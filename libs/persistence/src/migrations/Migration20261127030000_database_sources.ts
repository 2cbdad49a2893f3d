import { Migration } from '@mikro-orm/migrations';

/**
 * Point-in-time restores and branches (issue 27): a database made from another one's backups
 * records its source and the instant its data shows. The provisioner's first step for such a row
 * restores that instant instead of creating an empty database. The source row is never deleted
 * (deleted rows are only marked), so the reference holds.
 */
export class Migration20261127030000_database_sources extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column source_database_id uuid references databases (id) on delete restrict, add column source_at timestamptz`);
    this.addSql(`alter table databases add constraint databases_source_complete check ((source_database_id is null) = (source_at is null))`);
  }

  override down(): void {
    this.addSql(`alter table databases drop constraint databases_source_complete`);
    this.addSql(`alter table databases drop column source_database_id, drop column source_at`);
  }
}
