import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's default, and what its own password hashing uses. */
const ITERATIONS = 4096;

/**
 * The SCRAM-SHA-256 verifier of `password` as PostgreSQL stores it (RFC 5802 and 7677), with a
 * fresh 16-byte salt: `CREATE ROLE ... PASSWORD '<verifier>'` keeps the plaintext out of SQL text
 * and server logs. Only ASCII passwords: SASLprep leaves them as they are, so every client derives
 * the same keys; for others, libpq and node-postgres normalise differently from a plain hash.
 */
export function scramVerifier(password: string, iterations = ITERATIONS): string {
  return scramVerifierWithSalt(password, randomBytes(16), iterations);
}

/** scramVerifier with a given salt and iteration count (for known-answer tests). */
export function scramVerifierWithSalt(password: string, salt: Buffer, iterations = ITERATIONS): string {
  if (!/^[\x20-\x7e]*$/.test(password)) throw new Error('scramVerifier: passwords must be printable ASCII');
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
