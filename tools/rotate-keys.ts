// `npm run keys:rotate`: adds a new signing key to the platform's key set. Every replica loads
// it before it signs (it is published 10 s first); the old keys stop signing then and stop
// verifying once the last token they signed has expired. The new key's private half is sealed
// with SIGNING_KEY_SECRET_KEYS (else the ring `npm start` keeps in .data), which must open the
// key in use: a ring the replicas lack would leave them nothing to sign with.
import { ConfigError } from '@platform/config';
import { KeySet, maxSignedTokenSeconds, SIGNING_KEY_REFRESH_SECONDS } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { MikroSigningKeyRepository, openOrm } from '@platform/persistence';
import { consoleKeyLog, loadConfigOrExit, signingKeyRingOrExit } from './bootstrap.js';
import { localSigningKeySecretKeys, readRunningPlatform } from './local-state.js';

// DATABASE_URL when set; else the control plane of the running `npm start`, as it recorded it.
const running = readRunningPlatform(process.env);
const databaseUrl = process.env.DATABASE_URL || running?.databaseUrl;
if (!databaseUrl) {
  console.error('No control plane: run `npm start` first, or set DATABASE_URL.');
  process.exit(1);
}
const config = loadConfigOrExit({ ...process.env, DATABASE_URL: databaseUrl });
const developerTokenTtlSeconds = process.env.DEVELOPER_TOKEN_TTL ? config.developerTokenTtlSeconds : (running?.developerTokenTtlSeconds ?? config.developerTokenTtlSeconds);
const sealer = signingKeyRingOrExit(localSigningKeySecretKeys(process.env));
const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 1 });
try {
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, sealer, log: consoleKeyLog });
  const maxTokenSeconds = maxSignedTokenSeconds(developerTokenTtlSeconds);
  // Seals (and rotates out) what an older release left in plain text, and proves the ring opens the key in use.
  const ready = await keys.prepareForSigning({ maxTokenSeconds }).then(
    () => true,
    (error: unknown) => {
      if (!(error instanceof ConfigError)) throw error;
      console.error(`configuration error: ${error.message}`);
      return false;
    },
  );
  if (ready) {
    const kid = await keys.rotate({ maxTokenSeconds });
    console.log(`New signing key ${kid}: published now, signing in 10 s.`);
    console.log(`Older keys stop signing then (replicas notice within ${SIGNING_KEY_REFRESH_SECONDS} s), and stop verifying ${SIGNING_KEY_REFRESH_SECONDS + maxTokenSeconds + 60} s later.`);
  } else {
    process.exitCode = 78;
  }
} finally {
  await orm.close();
}
