import { expect } from 'chai';
import { startAdminServer, type AdminServer } from './admin-server.js';

const TOKEN = 'admin-token-0123456789abcdef0123456789';

describe('startAdminServer', () => {
  let admin: AdminServer;
  let ready: boolean;

  beforeEach(async () => {
    ready = true;
    admin = await startAdminServer({ host: '127.0.0.1', port: 0, token: TOKEN, realm: 'test admin', isReady: async () => ready, metrics: () => 'up 1\n' });
  });

  afterEach(() => admin.close());

  async function get(path: string, authorization?: string) {
    const answer = await fetch(`${admin.url}${path}`, { headers: authorization ? { Authorization: authorization } : {} });
    return { status: answer.status, type: answer.headers.get('content-type'), cache: answer.headers.get('cache-control'), body: await answer.text() };
  }

  it('answers health at once and readiness as the check says', async () => {
    expect(await get('/healthz')).to.deep.equal({ status: 200, type: 'application/json', cache: 'no-store', body: '{"status":"ok"}' });
    expect((await get('/readyz?probe=1')).body).to.equal('{"status":"ok"}');
    ready = false;
    expect(await get('/readyz')).to.deep.equal({ status: 503, type: 'application/json', cache: 'no-store', body: '{"status":"control plane unreachable"}' });
  });

  it('serves the metrics only with the token, challenging without it', async () => {
    const without = await fetch(`${admin.url}/metrics`);
    expect([without.status, without.headers.get('www-authenticate'), await without.json()]).to.deep.equal([
      401,
      'Bearer realm="test admin"',
      { errorCode: 'unauthenticated', message: 'The metrics want the admin token (Authorization: Bearer ...).', statusCode: 401 },
    ]);
    expect((await get('/metrics', `Bearer ${TOKEN}x`)).status).to.equal(401);
    expect(await get('/metrics', `Bearer ${TOKEN}`)).to.deep.equal({ status: 200, type: 'text/plain; version=0.0.4', cache: 'no-store', body: 'up 1\n' });
  });

  it('answers 404 in the APIError shape for any other path', async () => {
    expect(await get('/other?x=1')).to.deep.equal({
      status: 404,
      type: 'application/json',
      cache: 'no-store',
      body: JSON.stringify({ errorCode: 'not_found', message: 'No such path: /other', statusCode: 404 }),
    });
  });

  it('leaves the metrics open when no token is set', async () => {
    const open = await startAdminServer({ host: '127.0.0.1', port: 0, token: null, realm: 'test admin', isReady: async () => true, metrics: () => 'up 1\n' });
    try {
      expect((await fetch(`${open.url}/metrics`)).status).to.equal(200);
    } finally {
      await open.close();
    }
  });

  it('fails health when the service cannot serve, and answers 503 for metrics it could not gather', async () => {
    let alive = true;
    const admin = await startAdminServer({
      host: '127.0.0.1',
      port: 0,
      token: null,
      realm: 'test admin',
      isReady: async () => true,
      isAlive: () => alive,
      metrics: async () => {
        throw new Error('worker 2 did not answer within 2000 ms');
      },
    });
    try {
      expect((await fetch(`${admin.url}/healthz`)).status).to.equal(200);
      alive = false;
      const health = await fetch(`${admin.url}/healthz`);
      expect([health.status, await health.json()]).to.deep.equal([503, { status: 'not serving' }]);
      const metrics = await fetch(`${admin.url}/metrics`);
      expect([metrics.status, await metrics.json()]).to.deep.equal([
        503,
        { errorCode: 'metrics_unavailable', message: 'The metrics could not be gathered: worker 2 did not answer within 2000 ms', statusCode: 503 },
      ]);
    } finally {
      await admin.close();
    }
  });
});
