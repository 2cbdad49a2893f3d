import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { eventually, freePort, startTestPostgres, type TestPostgres } from '@platform/testing';

const TOKEN = 'metrics-token-0123456789abcdef0123456789';

/** Whether a TCP connection to host:port is accepted (any loopback address reaches this machine). */
async function accepts(host: string, port: number): Promise<boolean> {
  const socket = net.connect({ host, port });
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

describe('gateway: the admin listener (health and metrics)', function () {
  let postgres: TestPostgres;
  let controlPlane: TestControlPlane;
  const started: AppProcess[] = [];

  /** A gateway for plain clients on every address, with `env` on top. */
  async function startGateway(env: Record<string, string> = {}): Promise<{ gateway: AppProcess; port: number }> {
    const port = await freePort();
    const gateway = await startAppProcess('apps/gateway/src/main.ts', {
      portVariable: 'GATEWAY_ADMIN_PORT',
      env: { DATABASE_URL: controlPlane.url, LOG_LEVEL: 'error', GATEWAY_ALLOW_PLAIN: 'true', GATEWAY_HOST: '0.0.0.0', GATEWAY_PORT: String(port), ...env },
    });
    started.push(gateway);
    return { gateway, port };
  }

  before(async function () {
    this.timeout(60_000);
    postgres = await startTestPostgres();
    controlPlane = await createTestControlPlane(postgres, { issuer: 'http://oauth.test', audience: 'http://api.test' });
  });

  after(async function () {
    this.timeout(60_000);
    for (const gateway of started) await gateway.stop();
    await controlPlane?.close();
    await postgres?.stop();
  });

  it('listens on loopback only by default, while PostgreSQL clients are served on GATEWAY_HOST', async function () {
    this.timeout(60_000);
    const { gateway, port } = await startGateway();
    // 127.0.0.2 is this machine too, but not the address the admin listener is bound to.
    expect(await accepts('127.0.0.2', port), 'the PostgreSQL port on another address').to.equal(true);
    expect(await accepts('127.0.0.2', gateway.port), 'the admin port on another address').to.equal(false);
    const metrics = await fetch(`${gateway.url}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.include('# TYPE gateway_connections gauge');
    // The probe's connection above closes on its own schedule: its count goes back to 0.
    await eventually(async () => ((await (await fetch(`${gateway.url}/metrics`)).text()).includes('gateway_connections 0') ? true : undefined), 10_000, 'no open connection');
  });

  it('wants the token for /metrics when one is set; health and readiness stay open', async function () {
    this.timeout(60_000);
    const { gateway } = await startGateway({ GATEWAY_ADMIN_TOKEN: TOKEN });
    const without = await fetch(`${gateway.url}/metrics`);
    expect([without.status, without.headers.get('www-authenticate'), await without.json()]).to.deep.equal([
      401,
      'Bearer realm="gateway admin"',
      { errorCode: 'unauthenticated', message: 'The metrics want the admin token (Authorization: Bearer ...).', statusCode: 401 },
    ]);
    const wrong = await fetch(`${gateway.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN.slice(0, -1)}x` } });
    expect(wrong.status).to.equal(401);
    const right = await fetch(`${gateway.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(right.status).to.equal(200);
    expect(await right.text()).to.include('# TYPE gateway_connections gauge');
    for (const path of ['/healthz', '/readyz']) expect((await fetch(`${gateway.url}${path}`)).status, path).to.equal(200);
  });
});
