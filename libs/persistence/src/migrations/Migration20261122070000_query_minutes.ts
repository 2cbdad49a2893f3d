import { Migration } from '@mikro-orm/migrations';

/**
 * What each gateway measured, per database, tenant (the nil UUID for none) and minute: query and
 * error counts, their summed time, and the latency histogram as parallel arrays of bucket numbers
 * and counts (libs/domain latency-histogram.ts), so minutes of any gateways add up in SQL. A
 * gateway rewrites its own row of the current minute on every flush. No foreign key: a deleted
 * database's figures stay readable to nobody (the route finds live databases only) until pruned.
 */
export class Migration20261122070000_query_minutes extends Migration {
  override up(): void {
    this.addSql(`
      create table query_minutes (
        database_id uuid not null,
        minute timestamptz not null,
        tenant_id uuid not null,
        gateway_id uuid not null,
        queries bigint not null,
        errors bigint not null,
        total_ms double precision not null,
        latency_buckets integer[] not null,
        latency_counts bigint[] not null,
        primary key (database_id, minute, tenant_id, gateway_id)
      )`);
  }

  override down(): void {
    this.addSql('drop table if exists query_minutes');
  }
}
