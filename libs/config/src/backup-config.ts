import { resolve } from 'node:path';
import { readEnum, readInteger, readOptionalString, readString, type Env } from './env.js';

/** WAL archiving and base backups of the clusters the platform starts (README, "Backups"). */
export interface BackupConfig {
  /** BACKUPS: off leaves archiving and base backups out (the API still reports each server's archiving). */
  enabled: boolean;
  /** BACKUP_PGBACKREST: the pgBackRest program (tools/pgbackrest.mjs puts it in place). */
  pgbackrest: string;
  /** BACKUP_DIR: the repository folder; the caller's default when unset (npm start: beside the embedded cluster's folder). */
  dir: string | undefined;
  retentionDays: number;
  walQueueMaxMiB: number;
  fullEveryHours: number;
  diffEveryHours: number;
  /** BACKUP_CHECK_MS: how often the API looks at archiving and at due backups. */
  checkMs: number;
}

export const DEFAULT_PGBACKREST = '.data/pgbackrest/bin/pgbackrest';

export function loadBackupConfig(env: Env, cwd = process.cwd()): BackupConfig {
  const dir = readOptionalString(env, 'BACKUP_DIR');
  return {
    enabled: readEnum(env, 'BACKUPS', 'on', ['on', 'off']) === 'on',
    pgbackrest: resolve(cwd, readString(env, 'BACKUP_PGBACKREST', DEFAULT_PGBACKREST)),
    dir: dir === undefined ? undefined : resolve(cwd, dir),
    retentionDays: readInteger(env, 'BACKUP_RETENTION_DAYS', 14, { min: 1, max: 3_650 }),
    walQueueMaxMiB: readInteger(env, 'BACKUP_WAL_QUEUE_MAX_MB', 1_024, { min: 16, max: 16 * 1024 * 1024 }),
    fullEveryHours: readInteger(env, 'BACKUP_FULL_EVERY_HOURS', 7 * 24, { min: 1, max: 366 * 24 }),
    diffEveryHours: readInteger(env, 'BACKUP_DIFF_EVERY_HOURS', 24, { min: 1, max: 366 * 24 }),
    checkMs: readInteger(env, 'BACKUP_CHECK_MS', 60_000, { min: 100, max: 3_600_000 }),
  };
}
