import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Clock, SigningKeyRecord, SigningKeyRepository } from '@platform/domain';

export const SIGNING_ALG = 'ES256';
/**
 * Every signer reads the signing key again at least this often, whatever its `refreshSeconds`:
 * a key retired by a rotation elsewhere signs at most this much longer, which the rotation's
 * expiry arithmetic counts on.
 */
export const SIGNING_KEY_REFRESH_SECONDS = 30;
const UNKNOWN_KID_RELOAD_MS = 5_000;

export interface KeySetOptions {
  repository: SigningKeyRepository;
  clock: Clock;
  /** How long a verification key stays cached before the set is read again. */
  refreshSeconds?: number;
  /**
   * How long a new key is published before it signs, so every replica can load it first. Longer
   * than the unknown-kid reload interval; the first key of an installation signs at once.
   */
  publishDelaySeconds?: number;
}

/** The signing key: as a WebCrypto key (jose) and as a node:crypto KeyObject (the fast signer). */
export interface SigningKey {
  kid: string;
  key: CryptoKey;
  privateKey: KeyObject;
  retires: Date | null;
}

interface VerificationKey {
  kid: string;
  key: CryptoKey;
  record: SigningKeyRecord;
}

/**
 * The platform's signing keys, kept in the control plane so tokens survive restarts and every
 * replica verifies what any replica signed. The newest key that has not retired signs; every key
 * that has not expired verifies, which is what lets keys rotate with overlap.
 */
export class KeySet {
  private verifying = new Map<string, VerificationKey>();
  private loadedAt = 0;
  private signing: SigningKey | null = null;
  /** When the signing key is read again (epoch ms). */
  private signingRefreshAt = 0;
  private loadingSigning: Promise<void> | null = null;

  constructor(private readonly options: KeySetOptions) {}

  /** Makes sure a signing key exists, creating the first one on a new installation. */
  async ensureSigningKey(): Promise<void> {
    const now = this.options.clock.now();
    if (await this.options.repository.findSigning(now, now)) return;
    await this.rotate();
  }

  /**
   * Adds a new signing key. With `retireOthers`, every older key stops signing when the new one
   * starts (after the publish delay) and stops verifying `maxTokenSeconds` later, when the last
   * token it signed has expired; without it, older keys go on as they were.
   */
  async rotate(retireOthers?: { maxTokenSeconds: number }): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
    await this.options.repository.insert({
      kid,
      alg: SIGNING_ALG,
      publicJwk,
      privateJwk,
      created: this.options.clock.now(),
      retires: null,
      expires: null,
    });
    if (retireOthers) {
      const retires = new Date(this.options.clock.now().getTime() + (this.options.publishDelaySeconds ?? 10) * 1000);
      // Replicas that cached an old key may sign with it until their next read of the signing
      // key; its last token then lives maxTokenSeconds. A minute more covers clock skew and the
      // verifiers' tolerance.
      const expires = new Date(retires.getTime() + (SIGNING_KEY_REFRESH_SECONDS + retireOthers.maxTokenSeconds + 60) * 1000);
      await this.options.repository.retireAllExcept(kid, retires, expires);
    }
    this.signing = null;
    this.signingRefreshAt = 0;
    this.loadedAt = 0;
    return kid;
  }

  /**
   * The key that signs now. Re-read every `refreshSeconds` (a key another replica rotated in
   * takes over within that), when it retires, and when a key this replica saw being published
   * may start signing. Concurrent callers share one read; between reads, signing costs no I/O.
   */
  async signingKey(): Promise<SigningKey> {
    const now = this.options.clock.now();
    const due = !this.signing || (this.signing.retires !== null && this.signing.retires <= now) || now.getTime() >= this.signingRefreshAt;
    if (due) {
      this.loadingSigning ??= this.loadSigningKey(now).finally(() => {
        this.loadingSigning = null;
      });
      await this.loadingSigning;
    }
    return this.signing as SigningKey;
  }

  private async loadSigningKey(now: Date): Promise<void> {
    const delayMs = (this.options.publishDelaySeconds ?? 10) * 1000;
    const newest = await this.options.repository.findSigning(now, now);
    if (!newest) throw new Error('No signing key: call ensureSigningKey() at start-up');
    let record = newest;
    let refreshAt = now.getTime() + Math.min(this.options.refreshSeconds ?? 300, SIGNING_KEY_REFRESH_SECONDS) * 1000;
    if (newest.created.getTime() > now.getTime() - delayMs) {
      // The newest key is still being published: sign with the one before it, if there is one,
      // and look again the moment the newest may sign.
      record = (await this.options.repository.findSigning(now, new Date(now.getTime() - delayMs))) ?? newest;
      if (record !== newest) refreshAt = Math.min(refreshAt, newest.created.getTime() + delayMs);
    }
    if (this.signing?.kid !== record.kid) {
      this.signing = {
        kid: record.kid,
        key: (await importJWK(record.privateJwk as JWK, SIGNING_ALG)) as CryptoKey,
        privateKey: createPrivateKey({ key: record.privateJwk as JsonWebKey, format: 'jwk' }),
        retires: record.retires,
      };
    } else if (this.signing) {
      this.signing.retires = record.retires;
    }
    this.signingRefreshAt = refreshAt;
  }

  /**
   * The verification key for `kid`. A kid new to this process reloads the set (a key another
   * replica just rotated in), but at most once per UNKNOWN_KID_RELOAD_MS: kids are attacker input.
   */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    const unknown = !this.verifying.has(kid) && this.options.clock.now().getTime() - this.loadedAt > UNKNOWN_KID_RELOAD_MS;
    if (this.isStale() || unknown) await this.reload();
    const found = this.verifying.get(kid);
    if (!found) return null;
    if (found.record.expires && found.record.expires <= this.options.clock.now()) return null;
    return found.key;
  }

  /** Whether a key this process has loaded still verifies now (no I/O: for cached tokens). */
  stillVerifies(kid: string): boolean {
    const found = this.verifying.get(kid);
    return found !== undefined && (!found.record.expires || found.record.expires > this.options.clock.now());
  }

  /** The public keys as a JSON Web Key Set, for /.well-known/jwks.json. */
  async publicJwks(): Promise<{ keys: JWK[] }> {
    await this.reload();
    return { keys: [...this.verifying.values()].map((entry) => entry.record.publicJwk as JWK) };
  }

  private isStale(): boolean {
    const refreshMs = (this.options.refreshSeconds ?? 300) * 1000;
    return this.options.clock.now().getTime() - this.loadedAt > refreshMs;
  }

  private reloading: Promise<void> | null = null;

  private reload(): Promise<void> {
    // Unknown kids are attacker-controlled; collapse concurrent reloads into one query.
    this.reloading ??= (async () => {
      try {
        const records = await this.options.repository.listVerifying(this.options.clock.now());
        const next = new Map<string, VerificationKey>();
        for (const record of records) {
          const cached = this.verifying.get(record.kid);
          // The imported key is kept, the record is not: an expiry set since (an emergency
          // retirement) must take effect.
          next.set(
            record.kid,
            cached ? { ...cached, record } : { kid: record.kid, record, key: (await importJWK(record.publicJwk as JWK, SIGNING_ALG)) as CryptoKey },
          );
        }
        this.verifying = next;
        this.loadedAt = this.options.clock.now().getTime();
      } finally {
        this.reloading = null;
      }
    })();
    return this.reloading;
  }
}
