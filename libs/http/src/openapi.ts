import { toJsonSchema, type JsonSchema } from './schema.js';
import type { Route } from './route.js';

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  servers: { url: string; description: string }[];
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, wrong content type, or a field that fails validation',
  401: 'Missing, invalid or expired bearer token',
  403: 'Forbidden',
  404: 'Not found, or not visible to the caller',
  409: 'Conflict with the current state',
  413: 'Request body too large',
  429: 'Too many requests',
  500: 'Internal error',
  502: 'An upstream service failed',
  503: 'Unavailable',
};

function parameters(location: 'path' | 'query', schema: JsonSchema | undefined): object[] {
  if (!schema) return [];
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path' || required.has(name),
    schema: property,
  }));
}

/** The OpenAPI 3.1 document of a route table, from the same structs that validate requests. */
export function buildOpenApiDocument(routes: readonly Route<any>[], info: OpenApiInfo): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const responses: Record<string, object> = {
      [route.success.status]: {
        description: route.success.description,
        ...(route.success.schema
          ? { content: { [route.success.contentType ?? 'application/json']: { schema: toJsonSchema(route.success.schema) } } }
          : {}),
      },
    };
    const errors = new Set([400, ...route.errors, ...(route.auth === 'none' ? [] : [401]), 500]);
    for (const status of [...errors].sort()) {
      responses[status] = {
        description: ERROR_DESCRIPTIONS[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/APIError' } } },
      };
    }
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: route.auth === 'none' ? [] : [{ jwtBearerAuth: [] }],
      parameters: [
        ...parameters('path', route.params && toJsonSchema(route.params)),
        ...parameters('query', route.query && toJsonSchema(route.query)),
      ],
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: toJsonSchema(route.body) } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, ...(info.description ? { description: info.description } : {}) },
    servers: info.servers,
    paths,
    components: {
      securitySchemes: {
        jwtBearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A developer access token (ES256 JWT) from the token service',
        },
      },
      schemas: {
        APIError: {
          type: 'object',
          required: ['errorCode', 'message', 'statusCode'],
          properties: {
            errorCode: { type: 'string', description: 'A stable snake_case code, such as `internal_error`' },
            message: { type: 'string' },
            statusCode: { type: 'integer' },
          },
        },
      },
    },
  };
}
