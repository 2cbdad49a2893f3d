import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { newClientId, type ClientSecrets } from '@platform/domain';

function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/**
 * 256-bit random client secrets, stored as SHA-256 digests: they are not guessable, so a fast
 * digest is enough (a slow password hash would only cost every token request). Compared in
 * constant time.
 */
export class Sha256ClientSecrets implements ClientSecrets {
  newClientId(): string {
    return newClientId();
  }

  generate(): { secret: string; digest: string } {
    const secret = randomBytes(32).toString('base64url');
    return { secret, digest: digestOf(secret).toString('base64url') };
  }

  matches(secret: string, digest: string): boolean {
    const expected = Buffer.from(digest, 'base64url');
    const presented = digestOf(secret);
    return expected.length === presented.length && timingSafeEqual(expected, presented);
  }
}
