export { isProcessAlive, MANY_DATABASES_SETTINGS, severestLine, startEmbeddedPostgres, stopServerIn, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { REACHABLE_BASE, reachableFolder } from './reachable-folder.js';
export { serverCanReach } from './server-account.js';
export { freePort, isPortFree, scratchDir } from './scratch.js';
export { BACKUP_CONFIG_FILE, BACKUP_DEFAULTS, ClusterBackups, openClusterBackups, readArchiverStatus, type BackupSettings, type BackupType } from './backups.js';
export { OutsideRestoreWindowError, restoreToPointInTime, type PointInTimeRestore } from './point-in-time.js';
export { PgbackrestError } from './pgbackrest.js';
export type { ArchiverStatus, BackupRecord, RestoreWindow } from './wal-archive.js';
