import { expect } from 'chai';
import net from 'node:net';
import { pino } from 'pino';
import { eventually, freePort, httpClient } from '@platform/testing';
import { startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';

/** A TCP relay to PostgreSQL that the test can cut (every connection reset, new ones refused) and restore. */
async function startRelay(target: { host: string; port: number }) {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const open = () =>
    new Promise<void>((resolve) => {
      if (server) return resolve();
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await open();
  return {
    port,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        const closing = server!;
        server = null;
        closing.close(() => resolve());
      }),
    restore: open,
  };
}

/**
 * PostgreSQL down under running apps: every answer that needs it is 503 database_unavailable with
 * Retry-After, never 500, the token service's included; once it is back the apps answer again
 * without a restart.
 */
describe('when PostgreSQL is down', function () {
  this.timeout(90_000);
  let p: TestPlatform;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let api: RunningApi;
  let oauth: AppProcess;
  /** The API's log lines at level error (also printed). */
  const logged: string[] = [];

  before(async function () {
    p = await platform();
    const real = new URL(p.controlPlane.url);
    relay = await startRelay({ host: real.hostname, port: Number(real.port) });
    const relayed = new URL(p.controlPlane.url);
    relayed.host = `127.0.0.1:${relay.port}`;
    const env = { ...p.env, DATABASE_URL: relayed.href, API_PORT: '0', REVOCATION_POLL_MS: '60000' };
    const logger = pino({ name: 'api', level: 'error' }, {
      write: (line: string) => {
        logged.push(line);
        process.stdout.write(line);
      },
    });
    api = await startApi(loadApiConfig(env), { logger });
    oauth = await startAppProcess('apps/oauth/src/main.ts', { portVariable: 'OAUTH_PORT', env: { ...env, OAUTH_CLIENT_CACHE_MS: '0' } });
  });

  after(async function () {
    this.timeout(90_000);
    await relay?.restore();
    // Both, whatever one of them does: a child left running would keep this process alive.
    const closed = await Promise.allSettled([oauth?.stop(), api?.close()]);
    for (const result of closed) if (result.status === 'rejected') throw result.reason;
    // Every control-plane client came back by itself: none had to be ended by the close's grace.
    expect(logged.filter((line) => line.includes('still checked out'))).to.deep.equal([]);
    // Last: the relay must not keep this process alive once the suite is done.
    await relay?.cut();
  });

  it('answers 503 database_unavailable with Retry-After, never 500, and recovers by itself', async function () {
    const request = httpClient(api.url);
    const developer = await p.controlPlane.newDeveloper();
    const tokenRequest = () =>
      fetch(`${oauth.url}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'cli_nobodyknowsthis1', client_secret: 'x' }).toString(),
      });
    expect((await request('GET', '/workspaces', { token: developer.token })).status).to.equal(200);
    expect((await tokenRequest()).status).to.equal(401);

    await relay.cut();
    for (let attempt = 0; attempt < 3; attempt++) {
      const workspaces = await request('GET', '/workspaces', { token: developer.token });
      expect(workspaces.status, workspaces.text).to.equal(503);
      expect(workspaces.body).to.deep.equal({
        errorCode: 'database_unavailable',
        message: 'A database is out of reach (it refused or lost the connection, or is starting or stopping); try again shortly',
        statusCode: 503,
      });
      expect(workspaces.headers.get('retry-after')).to.equal('2');
    }
    const ready = await request('GET', '/readyz');
    expect(ready.status).to.equal(503);
    expect(ready.headers.get('retry-after')).to.equal('2');
    const token = await tokenRequest();
    expect(token.status, await token.clone().text()).to.equal(503);
    expect(((await token.json()) as { errorCode: string }).errorCode).to.equal('database_unavailable');
    expect(token.headers.get('retry-after')).to.equal('2');

    await relay.restore();
    await eventually(async () => ((await request('GET', '/workspaces', { token: developer.token })).status === 200 ? true : undefined), 20_000, 'the API to answer again');
    await eventually(async () => ((await tokenRequest()).status === 401 ? true : undefined), 20_000, 'the token service to answer again');
  });

  it('gets back the connections that cuts drop mid-transaction: answers again, and closes without waiting for one', async function () {
    const request = httpClient(api.url);
    const developer = await p.controlPlane.newDeveloper();
    // The reconcilers claim in a transaction every 200 ms: some of these cuts land inside one (in
    // CI, one did, and its client never came back: the close waited for ever). The after hook checks the close.
    for (let cut = 0; cut < 12; cut++) {
      await new Promise((resolve) => setTimeout(resolve, 60 + Math.random() * 200));
      await relay.cut();
      await relay.restore();
    }
    await eventually(async () => ((await request('GET', '/workspaces', { token: developer.token })).status === 200 ? true : undefined), 20_000, 'the API to answer again');
  });
});
