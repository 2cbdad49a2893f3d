export { isProcessAlive, MANY_DATABASES_SETTINGS, severestLine, startEmbeddedPostgres, stopServerIn, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { REACHABLE_BASE, reachableFolder } from './reachable-folder.js';
export { serverCanReach } from './server-account.js';
export { freePort, isPortFree, scratchDir } from './scratch.js';
