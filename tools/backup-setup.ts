// The embedded cluster's backups under `npm start` (README, "Backups"): on unless BACKUPS=off, into
// BACKUP_DIR (default: `backups` beside the cluster's folder, so `.data/backups`), with the
// pgBackRest that tools/pgbackrest.mjs fetches once. Without pgBackRest the platform starts all the
// same, without archiving, and says so.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { loadBackupConfig, type Env } from '@platform/config';
import { BACKUP_DEFAULTS, type BackupSettings } from '@platform/postgres-launcher';
import type { EmbeddedSettings } from './local-state.js';

/** The embedded cluster's name in the backup repository. */
export const EMBEDDED_STANZA = 'platform';

export function provideBackups(env: Env, settings: EmbeddedSettings): BackupSettings | null {
  const config = loadBackupConfig(env);
  if (!config.enabled || env.DATABASE_URL) return null;
  if (spawnSync(process.execPath, ['tools/pgbackrest.mjs'], { stdio: 'inherit' }).status !== 0) {
    console.log('Without pgBackRest the embedded PostgreSQL archives no WAL and takes no backups (README, "Backups").');
    return null;
  }
  return {
    pgbackrest: config.pgbackrest,
    repoDir: config.dir ?? join(dirname(settings.dir), 'backups'),
    stanza: EMBEDDED_STANZA,
    retentionDays: config.retentionDays,
    walQueueMaxMiB: config.walQueueMaxMiB,
    archiveTimeoutSeconds: BACKUP_DEFAULTS.archiveTimeoutSeconds,
  };
}
