import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { ConfigError } from '@platform/config';
import { UnavailableError, type Clock, type SecretSealer, type SigningKeyRecord, type SigningKeyRepository } from '@platform/domain';

export const SIGNING_ALG = 'ES256';
/**
 * Every signer reads the signing key again at least this often, whatever its `refreshSeconds`:
 * a key retired by a rotation elsewhere signs at most this much longer, which the rotation's
 * expiry arithmetic counts on.
 */
export const SIGNING_KEY_REFRESH_SECONDS = 30;
const UNKNOWN_KID_RELOAD_MS = 5_000;
/** The variable that holds the ring signing keys are sealed with (README, Configuration). */
export const SIGNING_KEY_RING_VARIABLE = 'SIGNING_KEY_SECRET_KEYS';
/**
 * After the signing key failed to open, callers get the same 503 this long before it is read and
 * tried again: a token request per millisecond must not become a query and a log line each.
 */
const UNREADABLE_RETRY_MS = 5_000;

/** The context a private half is sealed with: it opens only in the row of its own kid. */
function sealingContext(kid: string): string {
  return `signing-key:${kid}`;
}

/** The app's logger, as far as the key set uses it (pino's fits). */
export interface KeyLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface KeySetOptions {
  repository: SigningKeyRepository;
  clock: Clock;
  /**
   * Seals private halves before they are stored and opens them when they sign (the ring of
   * SIGNING_KEY_SECRET_KEYS): the control plane alone never holds a key that signs.
   */
  sealer: SecretSealer;
  /**
   * Where the key set reports what an operator must see: how many private halves it sealed at
   * start-up, and a half this ring cannot open (at most once per retry interval while the key that
   * should sign does not open; its callers get 503 `signing_key_unreadable` meanwhile).
   */
  log?: KeyLog;
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
 * What sealing at start-up did: plain halves sealed, halves sealed again with the ring's first key,
 * halves it could not open, and the key added to succeed the plain ones (null when there were none).
 */
export interface SealingReport {
  sealed: number;
  resealed: number;
  unreadable: { kid: string; reason: string }[];
  successor: string | null;
}

/**
 * The platform's signing keys, kept in the control plane so tokens survive restarts and every
 * replica verifies what any replica signed. The newest key that has not retired signs; every key
 * that has not expired verifies, which is what lets keys rotate with overlap. Private halves are
 * stored sealed with the `sealer`'s first key and opened only here.
 */
export class KeySet {
  private verifying = new Map<string, VerificationKey>();
  private loadedAt = 0;
  private signing: SigningKey | null = null;
  /** When the signing key is read again (epoch ms). */
  private signingRefreshAt = 0;
  private loadingSigning: Promise<void> | null = null;
  /** The answer while the signing key cannot be opened, and until when (epoch ms) it stands. */
  private unreadable: { error: UnavailableError; until: number } | null = null;
  /** Set by prepareForSigning: how a plain half found later is rotated out. */
  private retirement: { maxTokenSeconds: number } | null = null;

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
    const kid = await this.addKey(this.options.repository, retireOthers);
    this.forgetSigningKey();
    return kid;
  }

  /** Adds a key through `repository` (the set's own, or the locked one of `exclusively`); see rotate(). */
  private async addKey(repository: SigningKeyRepository, retireOthers?: { maxTokenSeconds: number }): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
    await repository.insert({
      kid,
      alg: SIGNING_ALG,
      publicJwk,
      sealedPrivateKey: this.options.sealer.seal(JSON.stringify(privateJwk), sealingContext(kid)),
      created: this.options.clock.now(),
      retires: null,
      expires: null,
    });
    if (retireOthers) {
      const retires = new Date(this.options.clock.now().getTime() + this.publishDelaySeconds() * 1000);
      // Replicas that cached an old key may sign with it until their next read of the signing
      // key; its last token then lives maxTokenSeconds. A minute more covers clock skew and the
      // verifiers' tolerance.
      const expires = new Date(retires.getTime() + (SIGNING_KEY_REFRESH_SECONDS + retireOthers.maxTokenSeconds + 60) * 1000);
      await repository.retireAllExcept(kid, retires, expires);
    }
    return kid;
  }

  /** The next signature and verification read the set again: it changed. */
  private forgetSigningKey(): void {
    this.signing = null;
    this.signingRefreshAt = 0;
    this.unreadable = null;
    this.loadedAt = 0;
  }

  /**
   * Seals every private half kept in plain text (written by a release from before sealing) and
   * retires those keys (see retirePlainKeys), then seals again with the ring's first key every half
   * sealed with another (a ring rotation). Halves this ring cannot open are left as they are and
   * reported. Replicas doing this at once write each half once and rotate once.
   */
  async sealPrivateKeys(retirement: { maxTokenSeconds: number }): Promise<SealingReport> {
    const { repository, sealer } = this.options;
    const { sealed, successor } = await this.retirePlainKeys(retirement);
    const report: SealingReport = { sealed, resealed: 0, unreadable: [], successor };
    for (const { kid, privateKey } of await repository.listPrivateKeys()) {
      // Plain halves are retirePlainKeys' alone: sealing one here would hide it from the rotation.
      if ('plain' in privateKey || !sealer.needsResealing(privateKey.sealed)) continue;
      let plaintext: string;
      try {
        plaintext = sealer.open(privateKey.sealed, sealingContext(kid));
      } catch (error) {
        report.unreadable.push({ kid, reason: (error as Error).message });
        continue;
      }
      // Conditional on what was read: of replicas re-sealing at once, one write wins.
      if (await repository.replacePrivateKey(kid, privateKey, sealer.seal(plaintext, sealingContext(kid)))) report.resealed++;
    }
    return report;
  }

  /**
   * Seals the private halves kept in plain text and, when there were any, adds a new key that
   * signs after the publish delay and retires every other, as `rotate` does: a plain half may
   * survive in old row versions, the WAL and backups, so a key once kept in plain text must stop
   * signing; it verifies until the last token it signed has expired. Under the key set's lock, in
   * one transaction: replicas starting together seal and rotate once, and a replica that finds
   * the halves sealed has a successor to find too.
   */
  async retirePlainKeys(retirement: { maxTokenSeconds: number }): Promise<{ sealed: number; successor: string | null }> {
    const { sealer } = this.options;
    const outcome = await this.options.repository.exclusively(async (locked) => {
      let sealed = 0;
      for (const { kid, privateKey } of await locked.listPrivateKeys()) {
        if (!('plain' in privateKey)) continue;
        if (await locked.replacePrivateKey(kid, privateKey, sealer.seal(JSON.stringify(privateKey.plain), sealingContext(kid)))) sealed++;
      }
      return { sealed, successor: sealed > 0 ? await this.addKey(locked, retirement) : null };
    });
    if (outcome.successor) this.forgetSigningKey();
    return outcome;
  }

  /**
   * A signing process's start-up, before it listens: seals every private half not yet sealed with
   * the ring's first key (an upgrade from a release that kept them in plain text, whose keys are
   * then rotated out, or a ring rotation) and logs how many; makes the first key of a new
   * installation; and opens the key that signs now, so a ring that lacks its key stops the start
   * with a ConfigError naming SIGNING_KEY_SECRET_KEYS instead of answering 503 to every token
   * request. `maxTokenSeconds` is the longest lifetime of a token the set signs (see
   * maxSignedTokenSeconds): how long a retired key must go on verifying.
   */
  async prepareForSigning(retirement: { maxTokenSeconds: number }): Promise<void> {
    this.retirement = retirement;
    const log = this.options.log;
    const report = await this.sealPrivateKeys(retirement);
    for (const { kid, reason } of report.unreadable) {
      log?.error({ kid, reason }, `a signing key's private half cannot be opened with ${SIGNING_KEY_RING_VARIABLE}`);
    }
    if (report.sealed > 0 || report.resealed > 0 || report.unreadable.length > 0) {
      log?.info({ sealed: report.sealed, resealed: report.resealed, unreadable: report.unreadable.length }, 'signing keys sealed with the first key of the ring');
    }
    if (report.successor) {
      log?.info(
        { successor: report.successor, signsInSeconds: this.publishDelaySeconds() },
        'signing keys once kept in plain text retire: a new key signs after the publish delay, and they verify until their tokens expire',
      );
    }
    await this.ensureSigningKey();
    try {
      await this.signingKey();
    } catch (error) {
      if (!(error instanceof UnavailableError)) throw error;
      const reason = error.cause instanceof Error ? error.cause.message : 'it does not open';
      throw new ConfigError(SIGNING_KEY_RING_VARIABLE, `cannot open the signing key in use (${reason}): give every replica the ring the platform's keys are sealed with`);
    }
  }

  private publishDelaySeconds(): number {
    return this.options.publishDelaySeconds ?? 10;
  }

  /**
   * The key that signs now. Re-read every `refreshSeconds` (a key another replica rotated in
   * takes over within that), when it retires, and when a key this replica saw being published
   * may start signing. Concurrent callers share one read; between reads, signing costs no I/O.
   */
  async signingKey(): Promise<SigningKey> {
    const now = this.options.clock.now();
    if (this.unreadable && now.getTime() < this.unreadable.until) throw this.unreadable.error;
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
    const delayMs = this.publishDelaySeconds() * 1000;
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
    if ('plain' in record.privateKey) {
      // A release from before sealing wrote it since start-up (its `keys:rotate`, say): this key
      // is rotated out like those found at start-up, and the set read again.
      if (!this.retirement) throw new Error('A plain signing key and no retirement: call prepareForSigning() at start-up');
      await this.retirePlainKeys(this.retirement);
      return this.loadSigningKey(now);
    }
    if (this.signing?.kid !== record.kid) {
      const privateJwk = await this.openPrivateKey(record.kid, record.privateKey.sealed, now);
      this.signing = {
        kid: record.kid,
        key: (await importJWK(privateJwk as JWK, SIGNING_ALG)) as CryptoKey,
        privateKey: createPrivateKey({ key: privateJwk as JsonWebKey, format: 'jwk' }),
        retires: record.retires,
      };
    } else if (this.signing) {
      this.signing.retires = record.retires;
    }
    this.signingRefreshAt = refreshAt;
  }

  /**
   * A key's private JWK. One this ring cannot open makes signing unavailable rather than an
   * internal error: the caller gets 503 `signing_key_unreadable`, the app's log the reason.
   */
  private async openPrivateKey(kid: string, sealed: string, now: Date): Promise<Record<string, unknown>> {
    try {
      const opened = JSON.parse(this.options.sealer.open(sealed, sealingContext(kid))) as Record<string, unknown>;
      this.unreadable = null;
      return opened;
    } catch (error) {
      const reason = (error as Error).message;
      this.options.log?.error({ kid, reason }, `the signing key cannot be opened with ${SIGNING_KEY_RING_VARIABLE}; token requests are answered 503 signing_key_unreadable`);
      const unavailable = new UnavailableError('signing_key_unreadable', 'Tokens cannot be signed right now; try again later', { cause: error });
      this.unreadable = { error: unavailable, until: now.getTime() + UNREADABLE_RETRY_MS };
      throw unavailable;
    }
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
