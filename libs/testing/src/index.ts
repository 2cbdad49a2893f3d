export * from './postgres.js';
export * from './http-client.js';
