import { Migration } from '@mikro-orm/migrations';

/** A workspace's live databases in list order: a page starts at its first row instead of scanning the workspace. */
export class Migration20261123020000_list_order extends Migration {
  override up(): void {
    this.addSql(`create index databases_workspace_order on databases (workspace_id, created, id) where deleted is null`);
  }

  override down(): void {
    this.addSql(`drop index if exists databases_workspace_order`);
  }
}
