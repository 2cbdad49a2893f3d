import { expect } from 'chai';
import { buildOpenApiDocument, type OpenApiInfo } from './openapi.js';
import { defineRoute, type Route } from './route.js';
import { dateTime, int, optional, record, text, toJsonSchema, uuid } from './schema.js';

interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { required: boolean; content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}

interface Document {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers: { url: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, Record<string, unknown>>; schemas: Record<string, Record<string, unknown>> };
}

const info: OpenApiInfo = {
  title: 'Platform API',
  version: '1.0.0',
  servers: [{ url: 'http://127.0.0.1:4100', description: 'local' }],
};

const workspaceParams = record({ workspaceSlug: text({ max: 48 }) });
const databaseParams = record({ workspaceSlug: text({ max: 48 }), databaseName: text({ max: 63 }) });
const listQuery = record({ limit: optional(int('Page size')), cursor: text({ max: 100 }) });
const createBody = record({ name: text({ max: 63 }), region: text({ max: 32 }) });
const databaseSchema = record({ id: uuid(), name: text({ max: 63 }), created: dateTime() });

const routes: Route<unknown>[] = [
  defineRoute({
    method: 'GET',
    path: '/health',
    operationId: 'health',
    summary: 'Health',
    tags: ['meta'],
    auth: 'none',
    success: { status: 200, description: 'OK', schema: record({ status: text({ max: 10 }) }) },
    errors: [],
    handler: async () => ({ status: 'ok' }),
  }),
  defineRoute({
    method: 'GET',
    path: '/workspaces/{workspaceSlug}/databases',
    operationId: 'listDatabases',
    summary: 'List databases',
    description: 'Lists the live databases',
    tags: ['databases'],
    auth: 'management',
    params: workspaceParams,
    query: listQuery,
    success: { status: 200, description: 'The databases', schema: databaseSchema },
    errors: [404],
    handler: async () => [],
  }),
  defineRoute({
    method: 'POST',
    path: '/workspaces/{workspaceSlug}/databases',
    operationId: 'createDatabase',
    summary: 'Create a database',
    tags: ['databases'],
    auth: 'management',
    params: workspaceParams,
    body: createBody,
    success: { status: 201, description: 'Created', schema: databaseSchema },
    errors: [409, 404],
    handler: async () => ({}),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/workspaces/{workspaceSlug}/databases/{databaseName}',
    operationId: 'deleteDatabase',
    summary: 'Delete a database',
    tags: ['databases'],
    auth: 'management',
    params: databaseParams,
    success: { status: 204, description: 'Deleted' },
    errors: [404],
    handler: async () => undefined,
  }),
];

describe('buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument(routes, { ...info, description: 'The API' }) as Document;
  const health = doc.paths['/health'].get;
  const list = doc.paths['/workspaces/{workspaceSlug}/databases'].get;
  const create = doc.paths['/workspaces/{workspaceSlug}/databases'].post;
  const remove = doc.paths['/workspaces/{workspaceSlug}/databases/{databaseName}'].delete;

  it('is an OpenAPI 3.1.0 document with the given info and servers', () => {
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.info).to.deep.equal({ title: 'Platform API', version: '1.0.0', description: 'The API' });
    expect(doc.servers).to.deep.equal(info.servers);
    expect((buildOpenApiDocument([], info) as Document).info).not.to.have.property('description');
  });

  it('groups operations of the same path under lower-case methods', () => {
    expect(Object.keys(doc.paths)).to.have.members([
      '/health',
      '/workspaces/{workspaceSlug}/databases',
      '/workspaces/{workspaceSlug}/databases/{databaseName}',
    ]);
    expect(Object.keys(doc.paths['/workspaces/{workspaceSlug}/databases'])).to.have.members(['get', 'post']);
    expect(create.operationId).to.equal('createDatabase');
    expect(list.description).to.equal('Lists the live databases');
    expect(create).not.to.have.property('description');
  });

  it('lists path parameters as required', () => {
    expect(remove.parameters).to.deep.equal([
      { name: 'workspaceSlug', in: 'path', required: true, schema: { type: 'string', maxLength: 48 } },
      { name: 'databaseName', in: 'path', required: true, schema: { type: 'string', maxLength: 63 } },
    ]);
  });

  it('lists query parameters as required only when the struct requires them', () => {
    const query = list.parameters.filter((p) => p.in === 'query');
    expect(query).to.deep.equal([
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', description: 'Page size' } },
      { name: 'cursor', in: 'query', required: true, schema: { type: 'string', maxLength: 100 } },
    ]);
    expect(health.parameters).to.deep.equal([]);
  });

  it('has no security for auth none and jwtBearerAuth otherwise', () => {
    expect(health.security).to.deep.equal([]);
    for (const operation of [list, create, remove]) expect(operation.security).to.deep.equal([{ jwtBearerAuth: [] }]);
    expect(doc.components.securitySchemes.jwtBearerAuth).to.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  });

  it('documents 401 only for authenticated routes', () => {
    expect(health.responses).not.to.have.property('401');
    for (const operation of [list, create, remove]) expect(operation.responses).to.have.property('401');
  });

  it('documents 500, 503, the route errors and what the framework answers for the route, all with the APIError schema', () => {
    // A route without input cannot be refused as invalid; one with a JSON body can be too large or not JSON.
    // Any route may find PostgreSQL down (503 database_unavailable).
    expect(Object.keys(health.responses)).to.have.members(['200', '500', '503']);
    expect(Object.keys(create.responses)).to.have.members(['201', '400', '401', '403', '404', '409', '413', '415', '500', '503']);
    expect(Object.keys(remove.responses)).to.have.members(['204', '400', '401', '403', '404', '500', '503']);
    for (const status of ['400', '401', '403', '404', '409', '413', '415', '500', '503']) {
      expect(create.responses[status].content).to.deep.equal({
        'application/json': { schema: { $ref: '#/components/schemas/APIError' } },
      });
    }
    expect(doc.components.schemas.APIError.required).to.deep.equal(['errorCode', 'message', 'statusCode']);
  });

  it('documents the success response with its schema, or none for 204', () => {
    expect(create.responses['201']).to.deep.equal({
      description: 'Created',
      content: { 'application/json': { schema: toJsonSchema(databaseSchema) } },
    });
    expect(remove.responses['204']).to.deep.equal({ description: 'Deleted' });
  });

  it('uses toJsonSchema of the body struct as the request body schema', () => {
    expect(create.requestBody).to.deep.equal({
      required: true,
      content: { 'application/json': { schema: toJsonSchema(createBody) } },
    });
    expect(list).not.to.have.property('requestBody');
    expect(remove).not.to.have.property('requestBody');
  });

  it('documents an optional body as not required', () => {
    const route = defineRoute({
      method: 'POST',
      path: '/things',
      operationId: 'makeThing',
      summary: 'Make a thing',
      tags: ['things'],
      auth: 'none',
      body: optional(record({ note: optional(text({ max: 5 })) })),
      success: { status: 201, description: 'Made' },
      errors: [],
      handler: async () => undefined,
    });
    const doc = buildOpenApiDocument([route as Route<unknown>], info) as any;
    expect(doc.paths['/things'].post.requestBody.required).to.equal(false);
  });

  it('honours a success content type', () => {
    const route = defineRoute({
      method: 'GET',
      path: '/openapi.json',
      operationId: 'openapi',
      summary: 'The document',
      tags: [],
      auth: 'none',
      success: { status: 200, description: 'OK', schema: record({}), contentType: 'application/vnd.oai.openapi+json' },
      errors: [],
      handler: async () => ({}),
    });
    const single = buildOpenApiDocument([route], info) as Document;
    expect(Object.keys(single.paths['/openapi.json'].get.responses['200'].content ?? {})).to.deep.equal([
      'application/vnd.oai.openapi+json',
    ]);
  });

  describe('a route that declares its own answers', () => {
    const problem = record({ error: text({ max: 50 }) }, 'A protocol error');
    const page = defineRoute({
      method: 'GET',
      path: '/page',
      operationId: 'page',
      summary: 'A page',
      tags: [],
      auth: 'none',
      success: { status: 200, description: 'The page', contentType: 'text/html' },
      errors: [],
      responses: [
        { status: 400, description: 'An error page', contentType: 'text/html' },
        { status: 303, description: 'Elsewhere', headers: { Location: 'Where to go' } },
      ],
      handler: async () => '<p>hi</p>',
    });
    const form = defineRoute({
      method: 'POST',
      path: '/form',
      operationId: 'form',
      summary: 'A form',
      tags: [],
      auth: 'none',
      form: true,
      success: { status: 200, description: 'Done', schema: record({ ok: text({ max: 2 }) }) },
      errors: [429],
      responses: [
        { status: 400, description: 'A protocol error', schema: problem },
        { status: 401, description: 'Who are you?', schema: problem, headers: { 'WWW-Authenticate': 'A Basic challenge' } },
      ],
      handler: async () => ({ ok: 'ok' }),
    });
    const doc = buildOpenApiDocument([page, form], info) as Document;
    const pageOperation = doc.paths['/page'].get;
    const formOperation = doc.paths['/form'].post;

    it('documents each with its media type: an HTML page is a string, a redirect has a Location and no body', () => {
      expect(pageOperation.responses).to.deep.equal({
        200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } },
        303: { description: 'Elsewhere', headers: { Location: { description: 'Where to go', schema: { type: 'string' } } } },
        400: { description: 'An error page', content: { 'text/html': { schema: { type: 'string' } } } },
        500: { description: 'Internal error', content: { 'application/json': { schema: { $ref: '#/components/schemas/APIError' } } } },
        503: { description: 'Unavailable', content: { 'application/json': { schema: { $ref: '#/components/schemas/APIError' } } } },
      });
    });

    it('declares no security and no 401 or 403 for a public route that does not answer them', () => {
      expect(pageOperation.security).to.deep.equal([]);
      expect(formOperation.security).to.deep.equal([]);
      expect(formOperation.responses).not.to.have.property('403');
      expect(formOperation.responses['401']).to.deep.equal({
        description: 'Who are you?',
        headers: { 'WWW-Authenticate': { description: 'A Basic challenge', schema: { type: 'string' } } },
        content: { 'application/json': { schema: toJsonSchema(problem) } },
      });
    });

    it("merges its answers with the framework's at one status: one schema per media type, or oneOf", () => {
      expect(Object.keys(formOperation.responses)).to.have.members(['200', '400', '401', '413', '429', '500', '503']);
      expect(formOperation.responses['400']).to.deep.equal({
        description: 'A protocol error',
        content: { 'application/json': { schema: { oneOf: [toJsonSchema(problem), { $ref: '#/components/schemas/APIError' }] } } },
      });
    });

    it('documents a form body as string fields', () => {
      expect(formOperation.requestBody).to.deep.equal({
        required: true,
        content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: { type: 'string' } } } },
      });
    });
  });
});
