import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { TokenVerifier } from '@platform/domain';
import { createHttpApp } from './app.js';
import { pagedAnswer } from './paging.js';
import { defineRoute, respond } from './route.js';
import { arrayOf, int, optional, queryInteger, record, text } from './schema.js';

const refuseAll: TokenVerifier = {
  verify: () => Promise.reject(new Error('no tokens here')),
};

const routes = [
  defineRoute<object, undefined, { limit?: number; cursor?: string }>({
    method: 'GET',
    path: '/items',
    operationId: 'items',
    summary: 'a page of one item, and a Link to the next',
    tags: ['test'],
    auth: 'none',
    query: record({ limit: optional(queryInteger({ min: 1, max: 10 })), cursor: optional(text({ max: 200 })) }),
    success: { status: 200, description: 'a page', schema: arrayOf(int()), headers: { Link: 'next' } },
    errors: [],
    handler: async ({ path, rawQuery }) =>
      pagedAnswer({ items: [1], nextAfterId: '00000000-0000-4000-8000-000000000001' }, (n) => n, { path, rawQuery }),
  }),
  defineRoute<object>({
    method: 'POST',
    path: '/items',
    operationId: 'addItem',
    summary: 'made, with its Location',
    tags: ['test'],
    auth: 'none',
    success: { status: 201, description: 'made', headers: { Location: 'the item' } },
    errors: [],
    handler: async () => respond({ status: 201, headers: { Location: '/items/1' } }),
  }),
];

/** An app trusting `proxies`, on a free loopback port; answers its base URL and how to stop it. */
async function serve(trustedProxies: string[]): Promise<{ base: string; server: Server }> {
  const app = createHttpApp<object>({
    routes,
    logger: pino({ level: 'silent' }),
    openScope: () => ({}),
    tokenVerifier: refuseAll,
    validateResponses: true,
    trustedProxies,
    openapi: { title: 't', version: '0.1.0-test', servers: [] },
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('addresses behind a prefix-stripping proxy (X-Forwarded-Prefix)', function () {
  const servers: Server[] = [];
  after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  it('puts a trusted proxy’s prefix in front of Link and Location', async function () {
    const { base, server } = await serve(['127.0.0.1']);
    servers.push(server);
    const headers = { 'x-forwarded-prefix': '/platform/v1' };
    const page = await fetch(`${base}/items?limit=1`, { headers });
    expect(page.status).to.equal(200);
    const cursor = Buffer.from('v1:00000000-0000-4000-8000-000000000001').toString('base64url');
    expect(page.headers.get('link')).to.equal(`</platform/v1/items?limit=1&cursor=${cursor}>; rel="next"`);
    const made = await fetch(`${base}/items`, { method: 'POST', headers });
    expect(made.status).to.equal(201);
    expect(made.headers.get('location')).to.equal('/platform/v1/items/1');
    const plain = await fetch(`${base}/items?limit=1`);
    expect(plain.headers.get('link')).to.equal(`</items?limit=1&cursor=${cursor}>; rel="next"`);
  });

  it('ignores the header from a peer it does not trust, and a prefix that is no plain path', async function () {
    const { base, server } = await serve(['10.0.0.0/8']);
    servers.push(server);
    const made = await fetch(`${base}/items`, { method: 'POST', headers: { 'x-forwarded-prefix': '/platform' } });
    expect(made.headers.get('location')).to.equal('/items/1');
    const trusting = await serve(['127.0.0.1']);
    servers.push(trusting.server);
    const odd = await fetch(`${trusting.base}/items`, { method: 'POST', headers: { 'x-forwarded-prefix': '/a/../b' } });
    expect(odd.headers.get('location')).to.equal('/items/1');
  });
});
