import { Migration } from '@mikro-orm/migrations';

/**
 * Restores and branches from dedicated compute (issue 27): a database records since when the
 * server that holds it now has held its data (set when it is built, and when a move onto an
 * instance or back commits). A point-in-time restore reads that server's backups, which know
 * nothing of the database before then. Databases built before this migration count from their
 * creation: their server's backups, begun with issue 27, start later anyway for most of them.
 */
export class Migration20261128010000_served_since extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column served_since timestamptz`);
    this.addSql(`update databases set served_since = created where status <> 'REQUESTED'`);
  }

  override down(): void {
    this.addSql(`alter table databases drop column served_since`);
  }
}
