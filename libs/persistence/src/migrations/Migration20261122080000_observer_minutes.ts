import { Migration } from '@mikro-orm/migrations';

/**
 * The database server's own view, per database and minute: statements it completed
 * (pg_stat_statements) and CPU time its backends used, each null when not known. The one API
 * replica that holds the observer lock adds every sample to its minute.
 */
export class Migration20261122080000_observer_minutes extends Migration {
  override up(): void {
    this.addSql(`
      create table observer_minutes (
        database_id uuid not null,
        minute timestamptz not null,
        statements bigint,
        cpu_ms double precision,
        primary key (database_id, minute)
      )`);
  }

  override down(): void {
    this.addSql('drop table if exists observer_minutes');
  }
}
