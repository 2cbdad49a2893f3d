import { createHmac, randomBytes } from 'node:crypto';
import type { ClientFirstMessage } from './scram-messages.js';

/** PostgreSQL's default (`scram_iterations`), which every credential's verifier has. */
const ITERATIONS = 4096;

/**
 * The server-first-message for a user name that is no credential: an exchange that cannot succeed,
 * as PostgreSQL goes through for an unknown role, so that the answer (password authentication
 * failed) and the steps before it read the same as for a wrong password. The salt is derived from
 * the name with the gateway's key, so it is the same at every attempt, as a real role's is; the
 * nonce is as long as PostgreSQL's (18 random bytes). Nothing is relayed: a name that is not a
 * credential's never reaches a cluster, whatever role of the cluster it names.
 */
export function mockServerFirstMessage(first: ClientFirstMessage, user: string, saltKey: Buffer): { message: string; nonce: string } {
  const salt = createHmac('sha256', saltKey).update(user).digest().subarray(0, 16).toString('base64');
  const nonce = `${first.clientNonce}${randomBytes(18).toString('base64')}`;
  return { message: `r=${nonce},s=${salt},i=${ITERATIONS}`, nonce };
}
