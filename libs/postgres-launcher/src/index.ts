export { startEmbeddedPostgres, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { freePort, scratchDir } from './scratch.js';
