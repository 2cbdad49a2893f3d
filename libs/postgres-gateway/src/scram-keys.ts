// SCRAM-SHA-256 (RFC 5802, 7677) with a role's verifier, for the pooled endpoint: the gateway checks
// a client's proof itself and recovers the client's ClientKey from it, which is what a SCRAM client
// needs to log in to the server as that role (with the same verifier there). The password itself is
// never seen: a proof holds the ClientKey only XORed with a signature that changes every exchange.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A role's verifier as PostgreSQL stores it: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. */
export interface ScramVerifier {
  iterations: number;
  /** Base64, as the server-first-message carries it. */
  salt: string;
  storedKey: Buffer;
  serverKey: Buffer;
}

const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

/** The verifier of `rolpassword`, or null when it is none (an MD5 hash, no password). */
export function parseVerifier(rolpassword: string | null): ScramVerifier | null {
  const match = rolpassword === null ? null : VERIFIER.exec(rolpassword);
  if (!match) return null;
  const storedKey = Buffer.from(match[3], 'base64');
  const serverKey = Buffer.from(match[4], 'base64');
  if (storedKey.length !== 32 || serverKey.length !== 32) return null;
  return { iterations: Number(match[1]), salt: match[2], storedKey, serverKey };
}

const hmac = (key: Buffer, text: string): Buffer => createHmac('sha256', key).update(text).digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i];
  return out;
}

/** A fresh server nonce part, printable as RFC 5802 wants it. */
export function serverNonce(): string {
  return randomBytes(18).toString('base64');
}

/** The server-first-message for a client nonce, with the verifier's salt and iterations. */
export function serverFirstMessage(clientNonce: string, nonce: string, verifier: ScramVerifier): string {
  return `r=${clientNonce}${nonce},s=${verifier.salt},i=${verifier.iterations}`;
}

/** The client-first-message without its GS2 header (`n,,`), as AuthMessage has it. */
export function clientFirstBare(clientFirst: Buffer): string {
  const text = clientFirst.toString('latin1');
  // The GS2 header is the first two commas' worth (`n,,` or `y,,`; an authzid is refused earlier).
  return text.slice(text.indexOf(',', text.indexOf(',') + 1) + 1);
}

/** The client-final-message without its proof, and the proof. */
function splitFinal(clientFinal: Buffer): { withoutProof: string; proof: Buffer } {
  const text = clientFinal.toString('latin1');
  const at = text.lastIndexOf(',p=');
  return { withoutProof: text.slice(0, at), proof: Buffer.from(text.slice(at + 3), 'base64') };
}

/**
 * Checks a client's proof against the verifier. Answers the client's ClientKey and the
 * server-final-message when it holds, null when the password was wrong.
 */
export function verifyClientProof(verifier: ScramVerifier, clientFirst: Buffer, serverFirst: string, clientFinal: Buffer): { clientKey: Buffer; serverFinal: string } | null {
  const { withoutProof, proof } = splitFinal(clientFinal);
  const authMessage = `${clientFirstBare(clientFirst)},${serverFirst},${withoutProof}`;
  const clientKey = xor(proof, hmac(verifier.storedKey, authMessage));
  if (!timingSafeEqual(sha256(clientKey), verifier.storedKey)) return null;
  return { clientKey, serverFinal: `v=${hmac(verifier.serverKey, authMessage).toString('base64')}` };
}

/** The client's side of a login to the server with a ClientKey, one step per server message. */
export class ScramClient {
  readonly nonce = randomBytes(18).toString('base64');
  readonly firstBare = `n=,r=${this.nonce}`;
  private expectedServerSignature: Buffer | null = null;

  constructor(
    private readonly clientKey: Buffer,
    private readonly verifier: ScramVerifier,
  ) {}

  /** The client-first-message (with its GS2 header). */
  first(): Buffer {
    return Buffer.from(`n,,${this.firstBare}`, 'latin1');
  }

  /** The client-final-message for the server's first message; throws if the server's salt or iterations are not the verifier's. */
  final(serverFirst: string): Buffer {
    const attributes = new Map(serverFirst.split(',').map((part) => [part[0], part.slice(2)] as const));
    const nonce = attributes.get('r') ?? '';
    if (!nonce.startsWith(this.nonce)) throw new Error('the server’s nonce does not extend the gateway’s');
    if (attributes.get('s') !== this.verifier.salt || Number(attributes.get('i')) !== this.verifier.iterations) {
      throw new Error('the server’s SCRAM salt or iterations differ from the verifier the gateway read');
    }
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.firstBare},${serverFirst},${withoutProof}`;
    const proof = xor(this.clientKey, hmac(this.verifier.storedKey, authMessage));
    this.expectedServerSignature = hmac(this.verifier.serverKey, authMessage);
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'latin1');
  }

  /** Checks the server-final-message: the server knew the verifier too. */
  checkServerFinal(serverFinal: string): void {
    const signature = Buffer.from(serverFinal.startsWith('v=') ? serverFinal.slice(2) : '', 'base64');
    if (!this.expectedServerSignature || signature.length !== 32 || !timingSafeEqual(signature, this.expectedServerSignature)) {
      throw new Error('the server’s SCRAM signature is wrong');
    }
  }
}
