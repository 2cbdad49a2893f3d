import { expect } from 'chai';
import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ConflictError, RateLimitedError, UnauthenticatedError, type Principal, type TokenVerifier } from '@platform/domain';
import { createHttpApp } from './app.js';
import { defineRoute, respond } from './route.js';
import { int, optional, queryInteger, record, text } from './schema.js';

/** Accepts the tokens 'good' (both scopes) and 'read-only' only. */
const verifier: TokenVerifier = {
  async verify(token: string): Promise<Principal> {
    if (token === 'read-only') return { kind: 'developer', developerId: 'd1', scopes: ['api:read'] };
    if (token !== 'good') throw new UnauthenticatedError('invalid_token', 'bad token');
    return { kind: 'developer', developerId: 'd1', scopes: ['api:read', 'api:write'] };
  },
};

/** A body over the compression threshold, with or without Cache-Control: no-store. */
const bigRoute = (path: string, noStore: boolean) =>
  defineRoute<object>({
    method: 'GET',
    path,
    operationId: path.slice(1),
    summary: 'a big answer',
    tags: ['test'],
    auth: 'none',
    success: { status: 200, description: 'big', schema: record({ text: text({ max: 10_000 }) }) },
    errors: [],
    handler: async () => respond({ body: { text: 'x'.repeat(5_000) }, headers: noStore ? { 'Cache-Control': 'no-store' } : {} }),
  });

const routes = [
  defineRoute<object, undefined, undefined, { name: string }>({
    method: 'PUT',
    path: '/either',
    operationId: 'either',
    summary: 'echoes a JSON or form body',
    tags: ['test'],
    auth: 'none',
    body: record({ name: text({ max: 10 }) }),
    formOrJson: true,
    success: { status: 200, description: 'the body', schema: record({ name: text({ max: 10 }) }) },
    errors: [],
    handler: async ({ body }) => body,
  }),
  bigRoute('/big', false),
  bigRoute('/big-secret', true),
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
  defineRoute<object, undefined, { to?: string }>({
    method: 'GET',
    path: '/page',
    operationId: 'page',
    summary: 'an HTML page, or a redirect',
    tags: ['test'],
    auth: 'none',
    query: record({ to: optional(text({ max: 10 })) }),
    success: { status: 200, description: 'a page', contentType: 'text/html' },
    errors: [],
    responses: [{ status: 303, description: 'elsewhere', headers: { Location: 'where' } }],
    handler: async ({ query }) =>
      query.to
        ? respond({ status: 303, headers: { Location: `/${query.to}` } })
        : respond({ body: '<p>hi</p>', headers: { 'Content-Type': 'text/html; charset=utf-8' } }),
  }),
  defineRoute<object, undefined, { answer: string }>({
    method: 'GET',
    path: '/undeclared',
    operationId: 'undeclared',
    summary: 'answers what it declares, or what it does not',
    tags: ['test'],
    auth: 'bearer',
    query: record({ answer: text({ max: 20 }) }),
    success: { status: 200, description: 'ok', schema: record({ ok: int() }) },
    errors: [409],
    handler: async ({ query, caller }) => {
      if (query.answer === 'conflict') throw new ConflictError('taken', 'Taken');
      if (query.answer === 'teapot') return respond({ status: 418, body: { ok: 1 }, headers: { 'Set-Cookie': 'refused=1; Path=/' } });
      if (query.answer === 'text') return 'plain words';
      if (query.answer === 'rate') throw new RateLimitedError(60);
      return { ok: caller.kind === 'developer' ? 1 : 0 };
    },
  }),
  defineRoute<object, { id: number }>({
    method: 'GET',
    path: '/items/{id}',
    operationId: 'item',
    summary: 'an item, whose handler changes the parameters it was given',
    tags: ['test'],
    auth: 'none',
    params: record({ id: queryInteger({ min: 1, max: 100 }) }),
    success: { status: 200, description: 'the item', schema: record({ id: int(), seen: int() }) },
    errors: [],
    handler: async ({ params }) => {
      const seen = params.id;
      params.id += 1000;
      return { id: params.id, seen };
    },
  }),
  defineRoute<object>({
    method: 'GET',
    path: '/problem',
    operationId: 'problem',
    summary: 'a JSON answer of a media type of its own',
    tags: ['test'],
    auth: 'none',
    success: { status: 200, description: 'a problem', contentType: 'application/problem+json' },
    errors: [],
    handler: async () => respond({ body: { title: 'odd' }, headers: { 'Content-Type': 'application/problem+json' } }),
  }),
  defineRoute<object>({
    method: 'POST',
    path: '/public',
    operationId: 'public',
    summary: 'a public route',
    tags: ['test'],
    auth: 'none',
    success: { status: 204, description: 'done' },
    errors: [],
    // @ts-expect-error a public route's handler has no caller
    handler: async ({ caller }) => void caller,
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

  it('compresses a big answer when asked, but never one that must not be stored', async () => {
    const get = (path: string, encoding: string) => fetch(`${base}${path}`, { headers: { 'accept-encoding': encoding } });
    const gzipped = await get('/big', 'gzip');
    expect(gzipped.headers.get('content-encoding')).to.equal('gzip');
    expect(((await gzipped.json()) as { text: string }).text).to.have.length(5_000);
    expect((await get('/big', 'identity')).headers.get('content-encoding')).to.equal(null);
    const secret = await get('/big-secret', 'gzip, br');
    expect(secret.headers.get('content-encoding')).to.equal(null);
    expect(secret.headers.get('content-length')).to.equal(String(JSON.stringify({ text: 'x'.repeat(5_000) }).length));
  });

  it('checks the path parameters of each request, the same path again included, on a copy of its own', async () => {
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${base}/items/7`);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal({ id: 1007, seen: 7 });
    }
    for (let i = 0; i < 2; i++) {
      const refused = await fetch(`${base}/items/0`);
      expect(refused.status).to.equal(400);
      expect(((await refused.json()) as { errorCode: string }).errorCode).to.equal('validation_failed');
    }
  });

  it('writes a JSON answer with its length, keeping a media type the route set', async () => {
    const item = await fetch(`${base}/items/12`);
    const text = await item.text();
    expect(item.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(item.headers.get('content-length')).to.equal(String(Buffer.byteLength(text)));
    expect(JSON.parse(text)).to.deep.equal({ id: 1012, seen: 12 });
    const problem = await fetch(`${base}/problem`);
    expect(problem.headers.get('content-type')).to.equal('application/problem+json');
    expect(await problem.json()).to.deep.equal({ title: 'odd' });
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

  it('answers a method the path does not take with 405 and an Allow header naming the ones it does', async () => {
    const response = await fetch(`${base}/echo`, { method: 'DELETE' });
    expect(response.status).to.equal(405);
    expect(response.headers.get('allow')).to.equal('POST');
    expect(await response.json()).to.deep.equal({ errorCode: 'method_not_allowed', message: 'The route does not accept this method', statusCode: 405 });
    const page = await fetch(`${base}/page`, { method: 'PUT' });
    expect(page.status).to.equal(405);
    expect(page.headers.get('allow')).to.equal('HEAD, GET');
  });

  it('answers a body that is not JSON with 415 unsupported_content_type, after authentication', async () => {
    const post = (token?: string) =>
      fetch(`${base}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: 'n=3',
      });
    expect((await post()).status).to.equal(401);
    const refused = await post('good');
    expect(refused.status).to.equal(415);
    expect(await refused.json()).to.deep.equal({
      errorCode: 'unsupported_content_type',
      message: 'The request body must be JSON (Content-Type: application/json)',
      statusCode: 415,
    });
  });

  it('takes a formOrJson body as JSON or as a form, checked by the same schema', async () => {
    const put = (type: string, body: string) => fetch(`${base}/either`, { method: 'PUT', headers: { 'content-type': type }, body });
    expect(await (await put('application/json', '{"name":"Ada"}')).json()).to.deep.equal({ name: 'Ada' });
    expect(await (await put('application/x-www-form-urlencoded', 'name=Grace')).json()).to.deep.equal({ name: 'Grace' });
    const unknown = await put('application/x-www-form-urlencoded', 'name=Ada&admin=1');
    expect(unknown.status).to.equal(400);
    expect(await unknown.json()).to.include({ errorCode: 'validation_failed' });
    expect((await put('text/plain', 'name=Ada')).status).to.equal(415);
  });

  it('answers an HTML page with its media type, and a redirect without a body', async () => {
    const page = await fetch(`${base}/page`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(await page.text()).to.equal('<p>hi</p>');
    const moved = await fetch(`${base}/page?to=there`, { redirect: 'manual' });
    expect(moved.status).to.equal(303);
    expect(moved.headers.get('location')).to.equal('/there');
    expect(moved.headers.get('content-type')).to.equal(null);
    expect(moved.headers.get('content-length')).to.equal('0');
    expect(await moved.text()).to.equal('');
    const done = await fetch(`${base}/public`, { method: 'POST' });
    expect(done.status).to.equal(204);
  });

  it('lets through answers the route declares, errors included', async () => {
    const get = (answer: string) => fetch(`${base}/undeclared?answer=${answer}`, { headers: { authorization: 'Bearer good' } });
    const ok = await get('ok');
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.deep.equal({ ok: 1 });
    const conflict = await get('conflict');
    expect(conflict.status).to.equal(409);
    expect(await conflict.json()).to.deep.equal({ errorCode: 'taken', message: 'Taken', statusCode: 409 });
    expect((await fetch(`${base}/undeclared?answer=ok`, { headers: { authorization: 'Bearer read-only' } })).status).to.equal(200);
    expect((await fetch(`${base}/undeclared?answer=${'x'.repeat(21)}`, { headers: { authorization: 'Bearer good' } })).status).to.equal(400);
  });

  it('refuses an answer whose status or media type the route does not declare, when told to check them', async () => {
    const get = (answer: string) => fetch(`${base}/undeclared?answer=${answer}`, { headers: { authorization: 'Bearer good' } });
    for (const [answer, what] of [
      ['teapot', 'undeclared answered 418 application/json, which its route does not declare'],
      ['text', 'undeclared answered 200 text/plain, which its route does not declare'],
      ['rate', 'undeclared answered 429 application/json, which its route does not declare'],
    ]) {
      const response = await get(answer);
      expect(response.status, answer).to.equal(500);
      expect(response.headers.get('set-cookie'), `${answer}: the refused answer's headers are gone`).to.equal(null);
      expect(await response.json(), answer).to.deep.equal({ errorCode: 'internal_error', message: 'An internal error occurred', statusCode: 500 });
      expect(logged.some((line) => String(JSON.stringify(line)).includes(what)), what).to.equal(true);
    }
    // The error the route threw reaches the log too, as the cause of the refusal.
    expect(logged.some((line) => String(JSON.stringify(line)).includes('Too many failed attempts')), 'the cause is logged').to.equal(true);
  });

  it('closes the connection after refusing a body it did not read, so a keep-alive client does not wait on it', async function () {
    this.timeout(20_000);
    // Idle keep-alive connections stay far longer than the test: only the refusal can close this one.
    const patient = createServer({ keepAliveTimeout: 60_000 }, server.listeners('request')[0] as Parameters<typeof createServer>[1]);
    await new Promise<void>((resolve) => patient.listen(0, '127.0.0.1', resolve));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const port = (patient.address() as AddressInfo).port;
      const body = Buffer.alloc(10 * 1024 * 1024, 'x');
      const post = request({ host: '127.0.0.1', port, path: '/echo', method: 'POST', agent, headers: { authorization: 'Bearer good', 'content-type': 'application/json', 'content-length': body.length } });
      // The server may close while the rest of the body is still on its way: that write fails, the answer stands.
      post.on('error', () => {});
      const [socket] = (await once(post, 'socket')) as [Socket];
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const answered = new Promise<IncomingMessage>((resolve) => post.once('response', resolve));
      post.end(body);
      const refused = await answered;
      refused.resume();
      expect(refused.statusCode).to.equal(413);
      expect(refused.headers.connection).to.equal('close');
      await closed;
      // The agent's next request gets a connection of its own and its answer at once.
      const next = request({ host: '127.0.0.1', port, path: '/echo', method: 'POST', agent, headers: { 'content-type': 'application/json' } });
      next.end('{"n": 1}');
      const [answer] = (await once(next, 'response')) as [IncomingMessage];
      answer.resume();
      expect(answer.statusCode).to.equal(401);
      expect(answer.headers.connection).to.equal('keep-alive');
    } finally {
      agent.destroy();
      patient.closeAllConnections();
      await new Promise<void>((resolve) => patient.close(() => resolve()));
    }
  });
});
