import { ApiErrorSchema } from './api-error.js';
import { declaredResponses, mediaTypeOf } from './responses.js';
import { isOptional, toJsonSchema, type JsonSchema } from './schema.js';
import type { ResponseSpec, Route } from './route.js';

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  servers: { url: string; description: string }[];
}

/** A form's fields reach the handler unvalidated, as strings; its description names them. */
const FORM: JsonSchema = { type: 'object', additionalProperties: { type: 'string' } };

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

function bodySchema(spec: ResponseSpec): JsonSchema {
  if (spec.schema === ApiErrorSchema) return { $ref: '#/components/schemas/APIError' };
  return spec.schema ? toJsonSchema(spec.schema) : { type: 'string' };
}

/** One response object per status: answers that share a status share it, one content entry per media type. */
function responsesObject(specs: readonly ResponseSpec[]): Record<string, object> {
  const byStatus = new Map<number, ResponseSpec[]>();
  for (const spec of specs) byStatus.set(spec.status, [...(byStatus.get(spec.status) ?? []), spec]);
  const responses: Record<string, object> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const content: Record<string, JsonSchema[]> = {};
    const headers: Record<string, object> = {};
    for (const spec of group) {
      const mediaType = mediaTypeOf(spec);
      if (mediaType) content[mediaType] = [...(content[mediaType] ?? []), bodySchema(spec)];
      for (const [name, description] of Object.entries(spec.headers ?? {})) headers[name] = { description, schema: { type: 'string' } };
    }
    responses[status] = {
      description: group[0].description,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(Object.keys(content).length > 0
        ? {
            content: Object.fromEntries(
              Object.entries(content).map(([mediaType, schemas]) => [mediaType, { schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas } }]),
            ),
          }
        : {}),
    };
  }
  return responses;
}

/** What a route's `auth` requires, as OpenAPI security requirements. */
function securityOf(route: Route<any>): object[] {
  if (route.security) return route.security.map((scheme) => ({ [scheme]: [] }));
  switch (route.auth) {
    case 'none':
      return [];
    case 'session':
      return [{ sessionCookieAuth: [] }];
    case 'cookie':
      return [{ familySessionCookie: [] }];
    default:
      return [{ jwtBearerAuth: [] }];
  }
}

/** The OpenAPI 3.1 document of a route table, from the same structs that validate requests. */
export function buildOpenApiDocument(routes: readonly Route<any>[], info: OpenApiInfo): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: securityOf(route),
      parameters: [
        ...parameters('path', route.params && toJsonSchema(route.params)),
        ...parameters('query', route.query && toJsonSchema(route.query)),
      ],
      ...(route.body
        ? {
            requestBody: {
              required: !isOptional(route.body),
              content: {
                'application/json': { schema: toJsonSchema(route.body) },
                ...(route.formOrJson ? { 'application/x-www-form-urlencoded': { schema: toJsonSchema(route.body) } } : {}),
              },
            },
          }
        : {}),
      ...(route.form ? { requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: FORM } } } } : {}),
      responses: responsesObject(declaredResponses(route)),
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
        sessionCookieAuth: {
          type: 'apiKey',
          in: 'cookie',
          name: 'auth.session-token',
          description: 'The session cookie a user sign-in sets (`__Secure-auth.session-token` under https); only from an allowed origin',
        },
        familySessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'nile.session-token',
          description:
            'The API family’s session cookie (`__Secure-nile.session-token` when the request’s `nile-secure-cookies` header is true or ' +
            'the API is served over https). State-changing calls also need the CSRF proof the operation describes.',
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
