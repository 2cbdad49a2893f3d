import { Migration } from '@mikro-orm/migrations';

/**
 * Insight figures past the minute rows' retention, rolled into hours (`1h`) and hours past theirs
 * into days (`1d`, UTC). A roll-up moves rows (deleted from the finer table in the same
 * statement), so every figure lives in exactly one place and readers add the tables up. No
 * uniqueness: a minute written late (a gateway cut off for days) rolls into a row of its own.
 */
export class Migration20261122090000_insight_rollups extends Migration {
  override up(): void {
    this.addSql(`
      create table query_rollups (
        resolution text not null check (resolution in ('1h', '1d')),
        database_id uuid not null,
        period timestamptz not null,
        tenant_id uuid not null,
        queries bigint not null,
        errors bigint not null,
        total_ms double precision not null,
        latency_buckets integer[] not null,
        latency_counts bigint[] not null
      )`);
    this.addSql(`create index query_rollups_lookup on query_rollups (database_id, resolution, period)`);
    this.addSql(`
      create table observer_rollups (
        resolution text not null check (resolution in ('1h', '1d')),
        database_id uuid not null,
        period timestamptz not null,
        statements bigint,
        cpu_ms double precision
      )`);
    this.addSql(`create index observer_rollups_lookup on observer_rollups (database_id, resolution, period)`);
    this.addSql(`create index query_minutes_minute on query_minutes (minute)`);
    this.addSql(`create index observer_minutes_minute on observer_minutes (minute)`);
  }

  override down(): void {
    this.addSql('drop table if exists query_rollups');
    this.addSql('drop table if exists observer_rollups');
    this.addSql('drop index if exists query_minutes_minute');
    this.addSql('drop index if exists observer_minutes_minute');
  }
}
