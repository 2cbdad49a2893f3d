export { BUILT_IN_SCHEMA_STEPS, BUILT_IN_SCHEMA_VERSION } from '@platform/data-plane';
export { PgClusterDirectory, PgClusterDriver } from './cluster-driver.js';
export { Reconciler, type ReconcilerOptions } from './reconciler.js';
