export * from './schema.js';
export * from './route.js';
export * from './api-error.js';
export * from './openapi.js';
export { createHttpApp, type HttpAppOptions, type RequestState } from './app.js';
export { managementRoutes, tokenServiceRoutes, type ApiScope, type TokenServiceScope } from './routes/index.js';
export { serve, runService, type Serving } from './serve.js';
