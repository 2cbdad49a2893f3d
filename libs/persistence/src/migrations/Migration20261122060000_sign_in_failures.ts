import { Migration } from '@mikro-orm/migrations';

/**
 * Failed sign-in counters, shared by every replica of apps/api and apps/oauth. A key names an
 * account, an (account, address) pair or an address; it is stored as its SHA-256, so the table
 * holds neither emails nor addresses and every key has the same size however long the typed one.
 */
export class Migration20261122060000_sign_in_failures extends Migration {
  override up(): void {
    this.addSql(`
      create table sign_in_failures (
        key_digest bytea primary key,
        failures integer not null,
        last_failure timestamptz not null
      )`);
    this.addSql(`create index sign_in_failures_last_failure on sign_in_failures (last_failure)`);
  }

  override down(): void {
    this.addSql('drop table if exists sign_in_failures');
  }
}
