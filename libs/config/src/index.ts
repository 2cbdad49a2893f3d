export * from './env.js';
export * from './platform-config.js';
