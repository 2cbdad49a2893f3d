import { Migration } from '@mikro-orm/migrations';

/**
 * A compute instance's server health (issue 26): a READY instance whose server went down on a full
 * disk stayed READY with no failure, and the API showed nothing. The compute reconciler records
 * `ok` or `down` with the server's own reason, and since when; all null while an instance has no
 * server to watch.
 */
export class Migration20261126010000_compute_health extends Migration {
  override up(): void {
    this.addSql(`alter table compute_instances add column health_status text, add column health_reason text, add column health_since timestamptz`);
    this.addSql(`alter table compute_instances add constraint compute_instances_health_status check (health_status in ('ok', 'down'))`);
    this.addSql(`alter table compute_instances add constraint compute_instances_health_whole check (num_nulls(health_status, health_since) in (0, 2))`);
  }

  override down(): void {
    this.addSql(`alter table compute_instances drop column health_status, drop column health_reason, drop column health_since`);
  }
}
