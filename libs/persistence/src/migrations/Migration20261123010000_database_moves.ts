import { Migration } from '@mikro-orm/migrations';

/**
 * A database whose data is moving between servers says so from just before its source pauses until
 * the switch commits: gateways hold new logins to it meanwhile rather than send them to a paused copy.
 */
export class Migration20261123010000_database_moves extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column moving_since timestamptz`);
  }

  override down(): void {
    this.addSql(`alter table databases drop column moving_since`);
  }
}
