export { PgClusterDirectory, PgClusterDriver, type RoleRepairLog } from './cluster-driver.js';
export { DatabaseReconciler, type DatabaseReconcilerOptions } from './database-reconciler.js';
export { ObserverSampler, type ObserverSamplerOptions } from './observer-sampler.js';
export { ComputeReconciler, type ComputeReconcilerOptions } from './compute-reconciler.js';
export { DatabaseMover, type ClientTools } from './database-mover.js';
export { PointInTimeCopier, renameRestoredDatabase, type PointInTimeCopierOptions } from './database-copier.js';
export { DiskSpaceProbe, type DiskSpaceOptions } from './disk-space.js';
export { LocalComputeDriver, type LocalComputeOptions } from './local-compute-driver.js';
export { BackupScheduler, dueBackup, type BackupSchedule, type BackupSchedulerOptions } from './backup-scheduler.js';
