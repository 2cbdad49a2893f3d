export * from './schema.js';
export * from './route.js';
export * from './api-error.js';
export * from './openapi.js';
export { createHttpApp, type HttpAppOptions, type RequestState } from './app.js';
export { healthRoutes, type HealthScope } from './health.routes.js';
export { serve, type Serving } from './serve.js';
