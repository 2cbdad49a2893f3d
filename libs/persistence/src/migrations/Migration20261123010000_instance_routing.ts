import { Migration } from '@mikro-orm/migrations';

/**
 * Routing to compute instances. A database whose data is moving between servers says so from just
 * before its source pauses until the switch commits: gateways hold new logins to it meanwhile
 * rather than send them to a paused copy. A live instance has a cancel slot (16 to 511, unique
 * among live instances): the number gateways put in the cancel keys of its sessions, so that any
 * gateway can send a cancel request there (regions use 1 to 3).
 */
export class Migration20261123010000_instance_routing extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column moving_since timestamptz`);
    this.addSql(`alter table compute_instances add column cancel_slot smallint check (cancel_slot between 16 and 511)`);
    this.addSql(`create unique index compute_instances_cancel_slot on compute_instances (cancel_slot) where status <> 'TERMINATED'`);
  }

  override down(): void {
    this.addSql(`drop index compute_instances_cancel_slot`);
    this.addSql(`alter table compute_instances drop column cancel_slot`);
    this.addSql(`alter table databases drop column moving_since`);
  }
}
