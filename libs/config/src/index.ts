export * from './env.js';
export * from './platform-config.js';
export * from './tls-policy.js';
export * from './backup-config.js';
export * from './mail-config.js';
