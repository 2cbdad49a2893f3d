import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { ConfigError, readOptionalString, type Env } from '@platform/config';
import type { SecretSealer } from '@platform/domain';

/** One key of the ring: an id that names it in every ciphertext, and 32 bytes of AES-256 key. */
export interface SecretKey {
  id: string;
  key: Buffer;
}

const VERSION = 'v1';
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * Seals secrets kept at rest (SSO client secrets, the private halves of signing keys) with
 * AES-256-GCM. The first key of the ring
 * seals; every key of the ring opens what it sealed, so a key is rotated by putting a new one
 * first and keeping the old one until what it sealed is sealed again. A ciphertext names its key
 * and is bound to a context (`aad`: the row it belongs to), so one copied into another row does
 * not open. Format: `v1.<key id>.<iv>.<ciphertext and tag>`, base64url.
 */
export class SecretBox implements SecretSealer {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly ring: readonly SecretKey[]) {
    if (ring.length === 0) throw new Error('a secret box needs at least one key');
    for (const { id, key } of ring) {
      if (!KEY_ID.test(id)) throw new Error(`key id '${id}' must be 1 to 32 letters, digits, - or _`);
      if (key.length !== 32) throw new Error(`key '${id}' must be 32 bytes`);
    }
    this.byId = new Map(ring.map(({ id, key }) => [id, key]));
    if (this.byId.size !== ring.length) throw new Error('key ids must differ');
  }

  /** The id of the key that seals now. */
  get currentKeyId(): string {
    return this.ring[0].id;
  }

  seal(plaintext: string, aad: string): string {
    const { id, key } = this.ring[0];
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, id, iv.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plaintext, or an error when the key is not in the ring, the context differs or the text was altered. */
  open(sealed: string, aad: string): string {
    const [version, id, iv, body, ...rest] = sealed.split('.');
    if (version !== VERSION || rest.length > 0 || !iv || !body) throw new Error('not a sealed secret');
    const key = this.byId.get(id);
    if (!key) throw new Error(`sealed with key '${id}', which is not in the ring`);
    const bytes = Buffer.from(body, 'base64url');
    if (bytes.length < 16) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8');
  }

  /**
   * A ring of keys for one other use, each derived from the key of the same id (HMAC-SHA256 keyed
   * by it, over `purpose`): what one ring seals the other cannot open, and the derived ring rotates
   * with this one (a rotated-out key still opens what it sealed while it stays in the ring).
   */
  derive(purpose: string): SecretBox {
    return new SecretBox(this.ring.map(({ id, key }) => ({ id, key: createHmac('sha256', key).update(purpose).digest() })));
  }

  /** Whether a sealed secret should be sealed again with the current key (it names another). */
  needsResealing(sealed: string): boolean {
    return sealed.split('.')[1] !== this.currentKeyId;
  }
}

/**
 * Reads a key ring from its configuration text: `id:base64key` entries separated by commas, the
 * sealing key first (SSO_SECRET_KEYS, SIGNING_KEY_SECRET_KEYS). Throws naming what is wrong, never
 * echoing a key.
 */
export function parseKeyRing(text: string): SecretKey[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry, index) => {
      const colon = entry.indexOf(':');
      if (colon < 1) throw new Error(`entry ${index + 1} must be id:base64key`);
      const id = entry.slice(0, colon);
      const key = Buffer.from(entry.slice(colon + 1), 'base64');
      if (key.length !== 32) throw new Error(`key '${id}' must be 32 bytes of base64 (openssl rand -base64 32)`);
      return { id, key };
    });
}

/** The key ring in `variable`, or null when it is unset; a ConfigError naming the variable when it is malformed. */
export function readSecretBox(env: Env, variable: string): SecretBox | null {
  const text = readOptionalString(env, variable);
  if (text === undefined) return null;
  try {
    return new SecretBox(parseKeyRing(text));
  } catch (error) {
    throw new ConfigError(variable, (error as Error).message);
  }
}

/** The key ring in `variable`; a ConfigError naming the variable and what it is `for` when it is unset or malformed. */
export function requireSecretBox(env: Env, variable: string, purpose: string): SecretBox {
  const box = readSecretBox(env, variable);
  if (!box) throw new ConfigError(variable, `is required: ${purpose} (id:base64key entries; README, Configuration)`);
  return box;
}
