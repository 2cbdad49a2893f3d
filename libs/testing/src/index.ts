export * from './postgres.js';
export * from './control-plane.js';
export * from './http-client.js';
