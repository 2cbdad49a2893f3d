import { Migration } from '@mikro-orm/migrations';

/**
 * A restore or branch that no attempt can make (its instant has left the backups' reach) records
 * why in `failure` and is shown FAILED; the provisioner no longer claims it. Until then such a row
 * was retried for ever, with backoff.
 */
export class Migration20261128020000_failed_copies extends Migration {
  override up(): void {
    this.addSql(`alter table databases add column failure text`);
  }

  override down(): void {
    this.addSql(`alter table databases drop column failure`);
  }
}
