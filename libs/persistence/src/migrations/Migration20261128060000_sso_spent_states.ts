import { Migration } from '@mikro-orm/migrations';

/**
 * The states of the API family's SSO sign-ins that finished (SHA-256 of the state), each kept until
 * its sealed cookie would have expired: the pending sign-in itself travels in that cookie, so this
 * is what makes it finish once.
 */
export class Migration20261128060000_sso_spent_states extends Migration {
  override up(): void {
    this.addSql(`create table sso_spent_states (state_digest bytea primary key, expires timestamptz not null)`);
    this.addSql(`create index sso_spent_states_expires on sso_spent_states (expires)`);
  }

  override down(): void {
    this.addSql('drop table if exists sso_spent_states');
  }
}
