import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { MANY_DATABASES_SETTINGS, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { freePort } from '@platform/testing';
import { SERVED_REGIONS, TEST_AUDIENCE, TEST_ISSUER } from './platform.js';

/** The pgBackRest the backup tests run (tools/pgbackrest.mjs puts it there). */
export const PGBACKREST = resolve(process.env.BACKUP_PGBACKREST ?? '.data/pgbackrest/bin/pgbackrest');

/** Skips a backup test file where pgBackRest is missing, saying why; in CI its absence is a failure. */
export function requirePgbackrest(context: Mocha.Context): void {
  if (existsSync(PGBACKREST)) return;
  const why = `pgBackRest is not at ${PGBACKREST}: run node tools/pgbackrest.mjs (README, "Backups")`;
  if (process.env.CI === 'true') throw new Error(why);
  console.log(`      skipped: ${why}`);
  // Skipped outside CI only, for the reason just printed: these files need pgBackRest, which a
  // developer may not have fetched yet (npm test fetches it; CI fails above without it).
  context.skip(); // skip reason: pgBackRest not fetched on this machine (outside CI only)
}

export interface BackedUpCluster {
  server: EmbeddedPostgresHandle;
  controlPlane: TestControlPlane;
  /** An API's environment on this control plane and cluster (add the file's own settings). */
  env: Record<string, string>;
}

/**
 * A cluster of a backup test file's own that archives its WAL into `repoDir` under `stanza` (the
 * other files' servers do not), with a control plane on it.
 */
export async function startBackedUpCluster(dir: string, options: { stanza: string; repoDir: string }): Promise<BackedUpCluster> {
  const server = await startEmbeddedPostgres({
    dir: join(dir, 'pg'),
    port: await freePort(),
    settings: MANY_DATABASES_SETTINGS,
    backups: { pgbackrest: PGBACKREST, repoDir: options.repoDir, stanza: options.stanza, retentionDays: 1, walQueueMaxMiB: 1024, archiveTimeoutSeconds: 60 },
  });
  const controlPlane = await createTestControlPlane(
    { adminUrl: server.url('postgres'), urlFor: (name: string) => server.url(name), stop: () => server.stop() },
    { issuer: TEST_ISSUER, audience: TEST_AUDIENCE },
  );
  const env = {
    ...controlPlane.env,
    API_PORT: '0',
    PUBLIC_BASE_URL: TEST_AUDIENCE,
    OAUTH_ISSUER: TEST_ISSUER,
    PLATFORM_REGIONS: SERVED_REGIONS.join(','),
    VALIDATE_RESPONSES: 'true',
    PASSWORD_HASH_LOGN: '10',
    BACKUP_PGBACKREST: PGBACKREST,
    BACKUP_CHECK_MS: '300',
  };
  return { server, controlPlane, env };
}
