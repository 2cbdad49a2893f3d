import type { Logger } from 'pino';
import type { SecretBox } from '@platform/auth';
import type { SqlSsoRegistrations } from '@platform/persistence';

/**
 * After a key rotation (a new key first in SSO_SECRET_KEYS), seals every client secret sealed
 * with an older key again with the new one, so the old key can be dropped once this has run: the
 * log says how many were sealed again and how many could not be opened. Replicas starting at once
 * do the same work twice at worst; an update that sealed a secret meanwhile wins.
 */
export async function resealSsoSecrets(registrations: SqlSsoRegistrations, box: SecretBox, logger: Logger): Promise<void> {
  let resealed = 0;
  let unreadable = 0;
  for (const registration of await registrations.sealedWithOtherKeys(box.currentKeyId)) {
    let plaintext: string;
    try {
      plaintext = box.open(registration.sealedSecret, registration.id);
    } catch (error) {
      unreadable++;
      logger.error({ registration: registration.id, err: (error as Error).message }, 'an SSO client secret cannot be opened with SSO_SECRET_KEYS');
      continue;
    }
    await registrations.reseal(registration.id, registration.sealedSecret, box.seal(plaintext, registration.id));
    resealed++;
  }
  if (resealed > 0 || unreadable > 0) logger.info({ resealed, unreadable, key: box.currentKeyId }, 'SSO client secrets sealed with the current key');
}
