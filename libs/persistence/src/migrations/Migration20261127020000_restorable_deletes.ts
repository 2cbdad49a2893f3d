import { Migration } from '@mikro-orm/migrations';

/**
 * Deletes that can be undone (issue 27). A deleted database keeps its PostgreSQL database, closed
 * to connections (`closed`: since when), until `purge_after` (the retention's end, or an explicit
 * purge); then the provisioner drops it (`dropped`) and the row stays for audit. A database
 * restored while closed is reopened by the provisioner: `closed` set on a live row says so.
 *
 * Rows deleted by an earlier release were meant to be dropped at once: they are due now.
 */
export class Migration20261127020000_restorable_deletes extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column purge_after timestamptz, add column closed timestamptz`);
    this.addSql(`update databases set purge_after = deleted where deleted is not null`);
    this.addSql(`alter table databases add constraint databases_deleted_purge_after check ((deleted is null) = (purge_after is null))`);
    // What the provisioner scans for: live databases short of READY or still closed, deleted ones not
    // yet dropped (to close them, or to drop them once due).
    this.addSql(`drop index databases_needing_work`);
    this.addSql(`
      create index databases_needing_work on databases (created)
      where (deleted is null and (status in ('PENDING', 'REQUESTED', 'BUILT', 'POOLED') or closed is not null))
         or (deleted is not null and dropped is null)`);
    // The list of deleted databases still restorable, paged like the live list.
    this.addSql(`create index databases_workspace_deleted_order on databases (workspace_id, created, id) where deleted is not null and dropped is null`);
  }

  override down(): void {
    this.addSql(`drop index databases_workspace_deleted_order`);
    this.addSql(`drop index databases_needing_work`);
    this.addSql(`
      create index databases_needing_work on databases (created)
      where (deleted is null and status in ('PENDING', 'REQUESTED', 'BUILT', 'POOLED'))
         or (deleted is not null and dropped is null)`);
    this.addSql(`alter table databases drop constraint databases_deleted_purge_after`);
    this.addSql(`alter table databases drop column purge_after, drop column closed`);
  }
}
