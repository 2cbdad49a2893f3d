export * from './postgres.js';
export * from './http-client.js';
export * from './promises.js';
export * from './fake-clock.js';
export * from './openssl-probe.js';
export * from './pgvector.js';
export * from './mail-server.js';
