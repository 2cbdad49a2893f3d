import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { UnauthenticatedError, type Principal, type TokenVerifier } from '@platform/domain';
import { createHttpApp } from './app.js';
import { defineRoute } from './route.js';
import { int, record, text } from './schema.js';

/** Accepts the tokens 'good' (both scopes) and 'read-only' only. */
const verifier: TokenVerifier = {
  async verify(token: string): Promise<Principal> {
    if (token === 'read-only') return { kind: 'developer', developerId: 'd1', scopes: ['api:read'] };
    if (token !== 'good') throw new UnauthenticatedError('invalid_token', 'bad token');
    return { kind: 'developer', developerId: 'd1', scopes: ['api:read', 'api:write'] };
  },
};

const routes = [
  defineRoute<object>({
    method: 'GET',
    path: '/boom',
    operationId: 'boom',
    summary: 'fails unexpectedly',
    tags: ['test'],
    auth: 'none',
    success: { status: 200, description: 'never' },
    errors: [],
    handler: async () => {
      throw new Error('secret detail: password=hunter2');
    },
  }),
  defineRoute<object, undefined, undefined, { n: number }>({
    method: 'POST',
    path: '/echo',
    operationId: 'echo',
    summary: 'echoes',
    tags: ['test'],
    auth: 'management',
    body: record({ n: int() }),
    success: { status: 200, description: 'the body', schema: record({ n: int() }) },
    errors: [],
    handler: async ({ body }) => body,
  }),
  defineRoute<object>({
    method: 'GET',
    path: '/drift',
    operationId: 'drift',
    summary: 'answers a body its schema does not allow',
    tags: ['test'],
    auth: 'none',
    success: { status: 200, description: 'x', schema: record({ name: text({ max: 3 }) }) },
    errors: [],
    handler: async () => ({ name: 'too long' }),
  }),
];

describe('createHttpApp', () => {
  let server: Server;
  let base: string;
  const logged: Record<string, unknown>[] = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
        done();
      },
    });
    const app = createHttpApp<object>({
      routes,
      logger: pino({ level: 'info' }, sink),
      openScope: () => ({}),
      tokenVerifier: verifier,
      validateResponses: true,
      openapi: { title: 't', version: '0.1.0-test', servers: [] },
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers an unexpected error with 500 internal_error, no detail, and logs it with the request id', async () => {
    const response = await fetch(`${base}/boom`, { headers: { 'x-request-id': 'req-boom-1' } });
    const text = await response.text();
    expect(response.status).to.equal(500);
    expect(JSON.parse(text)).to.deep.equal({ errorCode: 'internal_error', message: 'An internal error occurred', statusCode: 500 });
    expect(text).not.to.include('hunter2');
    const entry = logged.find((line) => line.requestId === 'req-boom-1' && line.msg === 'unhandled error');
    expect(entry, 'the error was logged with its request id').to.not.equal(undefined);
    expect(JSON.stringify(entry)).to.include('hunter2');
  });

  it('logs every request with its method, path, status and request id', async () => {
    await fetch(`${base}/nowhere`, { headers: { 'x-request-id': 'req-log-1' } });
    const entry = logged.find((line) => line.requestId === 'req-log-1' && line.msg === 'request');
    expect(entry).to.include({ method: 'GET', path: '/nowhere', status: 404 });
  });

  it('authenticates before it parses the body, then validates it', async () => {
    const post = (body: string, token?: string) =>
      fetch(`${base}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body,
      });
    expect((await post('{not json')).status).to.equal(401);
    expect((await post('{not json', 'bad')).status).to.equal(401);
    expect((await post('{not json', 'good')).status).to.equal(400);
    expect(await (await post('{"n": 3}', 'good')).json()).to.deep.equal({ n: 3 });
  });

  it('refuses a management token without the scope a write needs, before reading the body', async () => {
    const response = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer read-only' },
      body: '{not json',
    });
    expect(response.status).to.equal(403);
    expect(await response.json()).to.deep.include({ errorCode: 'insufficient_scope', statusCode: 403 });
    expect(response.headers.get('www-authenticate')).to.equal('Bearer error="insufficient_scope"');
  });

  it('refuses a response that does not match its schema when told to check them', async () => {
    const response = await fetch(`${base}/drift`);
    expect(response.status).to.equal(500);
    expect(logged.some((line) => String(JSON.stringify(line)).includes('response of drift does not match its schema'))).to.equal(true);
  });
});
