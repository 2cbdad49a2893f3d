export { PgClusterDirectory, PgClusterDriver } from './cluster-driver.js';
export { Reconciler, type ReconcilerOptions } from './reconciler.js';
export { ObserverSampler, type ObserverSamplerOptions } from './observer-sampler.js';
