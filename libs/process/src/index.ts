export { Closers, startWithClosers, type CloserLog } from './closers.js';
export { PeriodicWork, type PeriodicWorkOptions } from './periodic-work.js';
export { runService, type RunServiceOptions } from './run-service.js';
export { APP_NODE_FLAGS } from './node-flags.js';
