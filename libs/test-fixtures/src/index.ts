export * from './control-plane.js';
export * from './app-process.js';
export * from './api.fixtures.js';
export * from './sign-in.fixtures.js';
export * from './openid-provider.js';
export * from './browser.js';
export * from './docs.fixtures.js';
