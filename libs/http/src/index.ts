export * from './schema.js';
export * from './route.js';
export { ApiErrorSchema, describeStructError, toApiError, type ApiErrorBody, type MappedError } from './api-error.js';
export { buildOpenApiDocument, type OpenApiInfo } from './openapi.js';
export { declaredResponses } from './responses.js';
export { createHttpApp, type HttpAppOptions } from './app.js';
export type { RequestState } from './request-context.js';
export { healthRoutes, type HealthScope } from './health.routes.js';
export { serve, type Serving } from './serve.js';
