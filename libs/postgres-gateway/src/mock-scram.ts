import { createHmac, randomBytes } from 'node:crypto';
import type { ClientFirstMessage } from './scram-messages.js';

/** PostgreSQL's default (`scram_iterations`), which every credential's verifier has. */
const ITERATIONS = 4096;

/**
 * The server-first-message of an exchange that cannot succeed: for a user name that is no
 * credential, as PostgreSQL goes through for an unknown role, so that the answer (password
 * authentication failed) and the steps before it read the same as for a wrong password; and for a
 * real credential whose cluster failed before its own server-first-message. The salt is `known`
 * (the credential's own, as a cluster last sent it) or else derived from the name with the
 * gateway's key, so it is the same at every attempt, as a real role's is; the nonce is as long as
 * PostgreSQL's (18 random bytes).
 */
export function mockServerFirstMessage(first: ClientFirstMessage, user: string, saltKey: Buffer, known?: string): { message: string; nonce: string } {
  const saltAndIterations = known ?? `s=${createHmac('sha256', saltKey).update(user).digest().subarray(0, 16).toString('base64')},i=${ITERATIONS}`;
  const nonce = `${first.clientNonce}${randomBytes(18).toString('base64')}`;
  return { message: `r=${nonce},${saltAndIterations}`, nonce };
}

/**
 * The salt and iteration count (`s=...,i=...`) the cluster last sent for each credential, most
 * recent first out of `max`. When a credential's cluster fails before its server-first-message
 * (full, starting, unreachable), the gateway answers as for an unknown name, and must not show a
 * salt that differs from the one the credential had a moment before: that change alone would tell
 * a real name from an unknown one.
 */
export class KnownSalts {
  private readonly salts = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  remember(user: string, saltAndIterations: string): void {
    this.salts.delete(user);
    this.salts.set(user, saltAndIterations);
    if (this.salts.size > this.max) this.salts.delete(this.salts.keys().next().value!);
  }

  of(user: string): string | undefined {
    return this.salts.get(user);
  }
}
