export { isProcessAlive, startEmbeddedPostgres, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { DEFAULT_BINARY_CACHE } from './binaries.js';
export { serverCanReach } from './server-account.js';
export { freePort, isPortFree, scratchDir } from './scratch.js';
