import { expect } from 'chai';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import pg from 'pg';
import { createDatabase, createTestControlPlane, developerWithWorkspace, startAppProcess, waitForStatus, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { MANY_DATABASES_SETTINGS, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { databaseUrl } from '@platform/config';
import { eventually, freePort, httpClient, scratchDir } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { SERVED_REGIONS, TEST_AUDIENCE, TEST_ISSUER } from './support/platform.js';

/** What the apps under test wait for PostgreSQL at most, small so that the file runs quickly. */
const DEADLINE_MS = 1_500;
/** Their answer must come within the deadline and this much more (a loaded machine, the answer's own work). */
const SLACK_MS = 2_500;

/** The postmaster and every process it started (backends, background workers), from /proc. */
function clusterProcesses(postmaster: number): number[] {
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // The fields after the command's closing parenthesis: state, then the parent's id.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // Gone already.
    }
  }
}

/** One timed request; an app that hangs fails the test at `limitMs` instead of holding it until the server resumes. */
async function timed(url: string, limitMs: number, token?: string) {
  const started = performance.now();
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(limitMs) });
  const body = (await response.json()) as unknown;
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body, ms: performance.now() - started };
}

/**
 * A PostgreSQL that stops answering without refusing (SIGSTOP: sockets stay open, nothing comes
 * back): every request answers 503 database_unavailable with Retry-After within the request
 * deadline, readiness says so, a gateway login is refused with 57P03, and all of it recovers by
 * itself once the server resumes. On a cluster of this file's own: freezing a shared one would
 * stall the other files.
 */
describe('when PostgreSQL stops answering (frozen)', function () {
  this.timeout(180_000);
  const dir = scratchDir('platform-freeze-pg-');
  let server: EmbeddedPostgresHandle;
  let controlPlane: TestControlPlane;
  let api: RunningApi;
  let gateway: AppProcess;
  let gatewayPort: number;
  let frozen: number[] = [];
  const resume = () => {
    signal(frozen, 'SIGCONT');
    frozen = [];
  };

  before(async function () {
    server = await startEmbeddedPostgres({ dir, port: await freePort(), settings: MANY_DATABASES_SETTINGS });
    const postgres = { adminUrl: server.url('postgres'), urlFor: (name: string) => server.url(name), stop: () => server.stop() };
    controlPlane = await createTestControlPlane(postgres, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
    gatewayPort = await freePort();
    const env = {
      ...controlPlane.env,
      API_PORT: '0',
      GATEWAY_PORT: String(gatewayPort),
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      OAUTH_ISSUER: TEST_ISSUER,
      PLATFORM_REGIONS: SERVED_REGIONS.join(','),
      VALIDATE_RESPONSES: 'true',
      LOG_LEVEL: 'fatal',
      RECONCILE_INTERVAL_MS: '200',
      PASSWORD_HASH_LOGN: '10',
      COMPUTE_TYPES: '[]',
      DB_REQUEST_DEADLINE_MS: String(DEADLINE_MS),
      DB_CONNECT_TIMEOUT_MS: String(DEADLINE_MS),
      READINESS_TIMEOUT_MS: '1000',
      GATEWAY_HANDSHAKE_TIMEOUT_MS: '4000',
    };
    gateway = await startAppProcess('apps/gateway/src/main.ts', { portVariable: 'GATEWAY_ADMIN_PORT', env: { ...env, GATEWAY_ALLOW_PLAIN: 'true' } });
    api = await startApi(loadApiConfig(env));
    // Whatever happens in this file, its PostgreSQL is never left stopped.
    process.once('exit', resume);
  });

  after(async function () {
    resume();
    process.off('exit', resume);
    await api?.close();
    await gateway?.stop();
    await controlPlane?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  afterEach(resume);

  it('answers 503 with Retry-After within the deadline, refuses logins with 57P03, and recovers after SIGCONT', async function () {
    const request = httpClient(api.url);
    const p = { controlPlane, request };
    const { token, slug } = await developerWithWorkspace(p);
    const name = (await createDatabase(p, token, slug)).name as string;
    await waitForStatus(p, token, slug, name, 'READY');
    const D = `/workspaces/${slug}/databases/${name}`;
    const credential = (await request('POST', `${D}/credentials`, { token })).body as { id: string; password: string };
    const login = async () => {
      const client = new pg.Client({ connectionString: databaseUrl(`postgres://${credential.id}:${credential.password}@127.0.0.1:${gatewayPort}/`, name), connectionTimeoutMillis: 20_000 });
      client.on('error', () => {});
      const started = performance.now();
      try {
        await client.connect();
        await client.query('select 1');
        return { code: 'ok', ms: performance.now() - started };
      } catch (error) {
        return { code: (error as { code?: string }).code ?? (error as Error).message, ms: performance.now() - started };
      } finally {
        await client.end().catch(() => {});
      }
    };
    // Warm: the API's and the gateway's pools hold connections that the freeze will strand.
    expect((await request('GET', '/workspaces', { token })).status).to.equal(200);
    expect((await request('GET', `${D}/tenants`, { token })).status).to.equal(200);
    expect((await login()).code).to.equal('ok');

    frozen = clusterProcesses(server.pid);
    signal(frozen, 'SIGSTOP');
    const frozenAt = performance.now();
    const limit = DEADLINE_MS + SLACK_MS;
    const unavailable = { errorCode: 'database_unavailable', message: 'A database did not answer in time (within the request’s deadline or the connect timeout); try again shortly', statusCode: 503 };
    // The control plane (a stranded pooled connection, then new ones), a database's tenants (the data plane), readiness.
    const answers: number[] = [];
    for (const path of ['/workspaces', '/workspaces', `${D}/tenants`, `${D}/tenants`]) {
      const answer = await timed(`${api.url}${path}`, 20_000, token);
      answers.push(answer.ms);
      expect(answer.status, `${path} ${JSON.stringify(answer.body)}`).to.equal(503);
      expect(answer.body).to.deep.equal(unavailable);
      expect(answer.retryAfter).to.equal('2');
      expect(answer.ms, `${path} answered after ${Math.round(answer.ms)} ms`).to.be.below(limit);
    }
    const ready = await timed(`${api.url}/readyz`, 20_000);
    expect(ready.status).to.equal(503);
    expect(ready.body).to.deep.equal({ errorCode: 'control_plane_unavailable', message: 'The control plane is not reachable', statusCode: 503 });
    expect(ready.retryAfter).to.equal('2');
    expect(ready.ms).to.be.below(limit);
    const gatewayReady = await timed(`${gateway.url}/readyz`, 20_000);
    expect(gatewayReady.status).to.equal(503);
    expect(gatewayReady.ms).to.be.below(limit);
    const refused = await login();
    expect(refused.code).to.equal('57P03');
    // Within the gateway's handshake timeout (4 s here), never past it.
    expect(refused.ms).to.be.below(4_000 + SLACK_MS);
    console.log(`      frozen for ${Math.round(performance.now() - frozenAt)} ms; API answers in ${answers.map((ms) => Math.round(ms)).join(', ')} ms, /readyz ${Math.round(ready.ms)} ms, the gateway's ${Math.round(gatewayReady.ms)} ms, a login refused in ${Math.round(refused.ms)} ms`);

    resume();
    const resumedAt = performance.now();
    await eventually(async () => ((await request('GET', '/workspaces', { token })).status === 200 ? true : undefined), 20_000, 'the control plane to answer again');
    await eventually(async () => ((await request('GET', `${D}/tenants`, { token })).status === 200 ? true : undefined), 20_000, 'the database to answer again');
    await eventually(async () => ((await request('GET', '/readyz')).status === 200 ? true : undefined), 20_000, 'readiness again');
    await eventually(async () => ((await login()).code === 'ok' ? true : undefined), 20_000, 'gateway logins again');
    console.log(`      recovered ${Math.round(performance.now() - resumedAt)} ms after SIGCONT`);
  });
});
