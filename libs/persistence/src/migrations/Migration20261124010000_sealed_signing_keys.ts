import { Migration } from '@mikro-orm/migrations';

/**
 * Signing keys' private halves sealed at rest (issue 24): a read of the control plane alone must
 * not yield a key that signs tokens. The sealed half (AES-256-GCM under SIGNING_KEY_SECRET_KEYS,
 * bound to the key's kid) goes in a column of its own, and the plain one becomes optional rather
 * than going away here, since SQL cannot seal: the first replica with a key ring to start seals
 * every plain half and clears it. Until then a release from before sealing keeps working, and a
 * row holds exactly one of the two.
 */
export class Migration20261124010000_sealed_signing_keys extends Migration {
  override up(): void {
    this.addSql(`alter table signing_keys add column sealed_private_jwk text`);
    this.addSql(`alter table signing_keys alter column private_jwk drop not null`);
    this.addSql(`alter table signing_keys add constraint signing_keys_one_private_half check (num_nonnulls(private_jwk, sealed_private_jwk) = 1)`);
  }

  override down(): void {
    // SQL cannot open what was sealed: going back is only possible before the first seal.
    this.addSql(`
      do $$ begin
        if exists (select 1 from signing_keys where sealed_private_jwk is not null) then
          raise exception 'signing keys are sealed with SIGNING_KEY_SECRET_KEYS: the schema from before sealing cannot hold them';
        end if;
      end $$`);
    this.addSql(`alter table signing_keys drop constraint signing_keys_one_private_half`);
    this.addSql(`alter table signing_keys drop column sealed_private_jwk`);
    this.addSql(`alter table signing_keys alter column private_jwk set not null`);
  }
}
