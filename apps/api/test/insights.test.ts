// GET W/databases/{databaseId}/insights/query-performance: figures measured by the gateway from a
// known load (issue 13), and the window's validation.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expectApiError } from '@platform/test-fixtures';
import { eventually } from '@platform/testing';
import { platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase } from './support/fixtures.js';

const MINUTE = 60_000;
const floorMinute = (ms: number) => new Date(Math.floor(ms / MINUTE) * MINUTE);

/** The test platform's gateway allows plain connections: sslmode=require is left out. */
async function connect(url: string): Promise<pg.Client> {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  const client = new pg.Client({ connectionString: parsed.href });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Runs each statement in turn, timing each as the client sees it (ms). */
async function timedLoad(client: pg.Client, statements: string[]): Promise<number[]> {
  const latencies: number[] = [];
  for (const sql of statements) {
    const started = performance.now();
    await client.query(sql);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

/** The value of rank ceil(q × n), as the platform defines a percentile. */
function percentile(values: number[], quantile: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(quantile * sorted.length) - 1];
}

describe('query-performance insights', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let path: string;
  let fastTenant: string;
  let slowTenant: string;
  let windowStart: Date;
  const load = { fast: [] as number[], slow: [] as number[] };

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    path = `/workspaces/${owner.slug}/databases/${owner.database.id}/insights/query-performance`;
    fastTenant = (await createTenant(p, owner.token, owner.D)).id;
    slowTenant = (await createTenant(p, owner.token, owner.D)).id;
    const credentialFor = async (tenantId: string) => {
      const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token, json: { tenantId } });
      expect(created.status, created.text).to.equal(201);
      return connect(created.body.connectionUrl);
    };
    const [fast, slow] = [await credentialFor(fastTenant), await credentialFor(slowTenant)];
    windowStart = floorMinute(Date.now());
    // A known load: 300 quick queries in one tenant; 200 quick and 5 of 200 ms in the other.
    load.fast = await timedLoad(fast, Array.from({ length: 300 }, (_, i) => `select ${i}`));
    load.slow = await timedLoad(slow, [...Array.from({ length: 200 }, (_, i) => `select ${i}`), ...Array.from({ length: 5 }, () => 'select pg_sleep(0.2)')]);
    await Promise.all([fast.end(), slow.end()]);
  });

  /** The figures of the hour from the load's first minute, once the gateway has written all `queries` of them. */
  async function hourOf(queries: number, tenantId?: string) {
    const end = new Date(windowStart.getTime() + 60 * MINUTE).toISOString();
    return eventually(
      async () => {
        const answer = await p.request('GET', `${path}?${new URLSearchParams({ start: windowStart.toISOString(), end, granularity: '1h', ...(tenantId ? { tenantId } : {}) })}`, { token: owner.token });
        expect(answer.status, answer.text).to.equal(200);
        const [point] = answer.body.points;
        return Math.round(point.proxyQueriesPerSecond * 3600) === queries ? answer.body : undefined;
      },
      15_000,
      `${queries} queries in the insights`,
    );
  }

  it('counts every query the gateway relayed, per tenant and for the whole database', async function () {
    const fast = await hourOf(300, fastTenant);
    const slow = await hourOf(205, slowTenant);
    const all = await hourOf(505);
    for (const body of [fast, slow, all]) {
      expect(body).to.include({ source: 'shared', granularity: '1h' });
      expect(body.points).to.have.length(1);
      expect(body.points[0].timestamp).to.equal(windowStart.toISOString());
    }
  });

  it('answers the p99 of the gateway’s merged histograms: between the server’s 200 ms and the client’s own p99, moved by the slow queries', async function () {
    const fast = (await hourOf(300, fastTenant)).points[0];
    const slow = (await hourOf(205, slowTenant)).points[0];
    const clientSlowP99 = percentile(load.slow, 0.99);
    expect(clientSlowP99, 'the client’s p99 is a slow query').to.be.at.least(200);
    // The gateway times a query from the client's message to the server's answer: never less than
    // the 200 ms the server slept, never more than the client saw (which adds its own side of the
    // round trip: over 5 ms on a loaded machine). A bucket's middle is within 1/128 of its values.
    const bucket = 1 / 128;
    expect(slow.observerP99LatencyMs).to.be.within(200 * (1 - bucket), clientSlowP99 * (1 + bucket));
    expect(fast.observerP99LatencyMs).to.be.at.most(percentile(load.fast, 0.99) + 5);
    // Not moved by the other tenant's slow queries (their 200 ms are in its histogram only).
    expect(fast.observerP99LatencyMs).to.be.below(200 * (1 - bucket));
    // The server's view is per database: a tenant's buckets have none.
    expect([slow.observerQueriesPerSecond, slow.observerCpuMilliseconds]).to.deep.equal([null, null]);
  });

  it('counts the statements the database server completed (pg_stat_statements): every query of the load, and the platform’s own', async function () {
    const end = new Date(windowStart.getTime() + 60 * MINUTE).toISOString();
    const seen = await eventually(
      async () => {
        const answer = await p.request('GET', `${path}?${new URLSearchParams({ start: windowStart.toISOString(), end, granularity: '1h' })}`, { token: owner.token });
        const statements = Math.round((answer.body.points[0].observerQueriesPerSecond ?? 0) * 3600);
        return statements >= 505 ? statements : undefined;
      },
      // Samples come every INSIGHTS_SAMPLE_MS, but a loaded machine can hold one back for seconds.
      30_000,
      'the observer to see the load',
    );
    // Besides the load: the platform's own statements on the database (its tenants, credentials, insights' tenant checks).
    expect(seen).to.be.below(505 + 200);
  });

  it('measures the CPU of the database’s backends: a second of counting shows, a second of sleeping does not', async function () {
    const cpuOf = async (sql: string) => {
      const database = await developerWithReadyDatabase(p);
      const created = await p.request('POST', `${database.D}/credentials`, { token: database.token });
      expect(created.status, created.text).to.equal(201);
      const client = await connect(created.body.connectionUrl);
      const start = floorMinute(Date.now());
      await client.query(sql);
      const window = new URLSearchParams({ start: start.toISOString(), end: new Date(start.getTime() + 60 * MINUTE).toISOString(), granularity: '1h' });
      // Sampled while the connection is open: a backend that ends between two samples takes its last share with it.
      const point = await eventually(
        async () => {
          const answer = await p.request('GET', `/workspaces/${database.slug}/databases/${database.database.id}/insights/query-performance?${window}`, { token: database.token });
          const [first] = answer.body.points;
          return first.observerQueriesPerSecond !== null && first.observerQueriesPerSecond * 3600 >= 1 && first.observerCpuMilliseconds !== null ? first : undefined;
        },
        15_000,
        'the observer to sample the backend',
      );
      await client.end();
      return point.observerCpuMilliseconds as number;
    };
    const counting = await cpuOf('select count(*) from generate_series(1, 10000000)');
    const sleeping = await cpuOf('select pg_sleep(1)');
    expect(counting, 'CPU of a second of counting').to.be.above(300);
    // What a second of sleeping shows is the backends' starts (this one's and the API's: tens of ms
    // each, more on a loaded machine), far from a second: CPU time, not time.
    expect(sleeping, 'CPU of a second of sleeping').to.be.below(Math.min(counting / 2, 400));
  });

  it('rolls minutes up consistently: the hour’s queries are the sum of its sixty minutes', async function () {
    await hourOf(505);
    const end = new Date(windowStart.getTime() + 60 * MINUTE).toISOString();
    const minutes = await p.request('GET', `${path}?${new URLSearchParams({ start: windowStart.toISOString(), end, granularity: '1m' })}`, { token: owner.token });
    expect(minutes.status, minutes.text).to.equal(200);
    expect(minutes.body.points).to.have.length(60);
    expect(minutes.body.points.map((point: { timestamp: string }) => point.timestamp).slice(0, 2)).to.deep.equal([windowStart.toISOString(), new Date(windowStart.getTime() + MINUTE).toISOString()]);
    const total = minutes.body.points.reduce((sum: number, point: { proxyQueriesPerSecond: number }) => sum + point.proxyQueriesPerSecond * 60, 0);
    expect(Math.round(total)).to.equal(505);
    // Empty minutes are present, with zeros.
    expect(minutes.body.points[59]).to.deep.equal({
      timestamp: new Date(windowStart.getTime() + 59 * MINUTE).toISOString(),
      proxyQueriesPerSecond: 0,
      // A minute still to come: the server has not been sampled in it.
      observerQueriesPerSecond: null,
      observerP99LatencyMs: 0,
      observerCpuMilliseconds: null,
    });
  });

  describe('refusals', function () {
    // Relative to now: figures by the minute only go back 8 days.
    const base = floorMinute(Date.now()).getTime() - 3_600_000;
    const at = (minutes: number, suffix = '') => new Date(base + minutes * MINUTE).toISOString().replace('.000Z', `${suffix}Z`);
    const start = at(0);
    const cases: [string, Record<string, string>, string][] = [
      ['a start with seconds', { start: at(0).replace(':00Z', ':30Z'), end: at(60) }, 'start must be a whole minute'],
      ['an end with milliseconds', { start, end: at(60, '.500') }, 'end must be a whole minute'],
      ['an end before the start', { start, end: at(-60) }, 'end must be after start'],
      ['an end equal to the start', { start, end: start }, 'end must be after start'],
      ['two days of minutes', { start: at(-2 * 1440), end: at(0), granularity: '1m' }, 'at most 1 days'],
      ['eight days of 5 minutes', { start: at(-8 * 1440), end: at(0), granularity: '5m' }, 'at most 7 days'],
      ['a date without an offset', { start: at(0).replace('Z', ''), end: at(60) }, 'start must be a date-time with an offset'],
      ['a date that is no date', { start, end: 'tomorrow' }, 'end must be a date-time with an offset'],
      ['minutes of a month ago', { start: at(-30 * 1440), end: at(-29 * 1440), granularity: '1m' }, 'figures by the minute are kept for 8 days'],
    ];
    for (const [what, query, message] of cases) {
      it(`answers 400 invalid_window for ${what}`, async function () {
        const answer = await p.request('GET', `${path}?${new URLSearchParams(query)}`, { token: owner.token });
        expectApiError(answer, 400, 'invalid_window');
        expect(answer.body.message).to.include(message);
      });
    }

    it('answers 400 validation_failed for an unknown granularity and a tenant id that is no UUID, naming the allowed values', async function () {
      const granularity = await p.request('GET', `${path}?${new URLSearchParams({ start, end: at(60), granularity: '2m' })}`, { token: owner.token });
      expect([granularity.status, granularity.body]).to.deep.equal([
        400,
        { errorCode: 'validation_failed', message: 'Invalid request: query.granularity: must be one of 1m, 5m, 1h, 1d', statusCode: 400 },
      ]);
      const tenant = await p.request('GET', `${path}?${new URLSearchParams({ start, end: at(60), tenantId: 'x' })}`, { token: owner.token });
      expect([tenant.status, tenant.body]).to.deep.equal([400, { errorCode: 'validation_failed', message: 'Invalid request: query.tenantId: must be a UUID', statusCode: 400 }]);
    });

    it('takes the last hour of whole minutes when start and end are left out, and an hour before a lone end', async function () {
      const before = floorMinute(Date.now()).getTime();
      const answer = await p.request('GET', path, { token: owner.token });
      const after = floorMinute(Date.now()).getTime();
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.granularity).to.equal('1m');
      expect(answer.body.points).to.have.length(60);
      const first = new Date(answer.body.points[0].timestamp).getTime();
      expect([before - 60 * MINUTE, after - 60 * MINUTE]).to.include(first);
      expect(new Date(answer.body.points[59].timestamp).getTime()).to.equal(first + 59 * MINUTE);
      const endOnly = await p.request('GET', `${path}?${new URLSearchParams({ end: at(0) })}`, { token: owner.token });
      expect(endOnly.status, endOnly.text).to.equal(200);
      expect(endOnly.body.points.map((point: { timestamp: string }) => point.timestamp)).to.have.length(60);
      expect(endOnly.body.points[0].timestamp).to.equal(at(-60).replace('Z', '.000Z'));
      const startOnly = await p.request('GET', `${path}?${new URLSearchParams({ start: at(30) })}`, { token: owner.token });
      expect(startOnly.status, startOnly.text).to.equal(200);
      expect(startOnly.body.points[0].timestamp).to.equal(at(30).replace('Z', '.000Z'));
    });

    it('names the database by its name as well as by its id, with the same figures', async function () {
      const window = new URLSearchParams({ start: windowStart.toISOString(), end: new Date(windowStart.getTime() + 60 * MINUTE).toISOString(), granularity: '1h' });
      const byId = await p.request('GET', `${path}?${window}`, { token: owner.token });
      const byName = await p.request('GET', `/workspaces/${owner.slug}/databases/${owner.database.name}/insights/query-performance?${window}`, { token: owner.token });
      const upperCaseId = await p.request('GET', `/workspaces/${owner.slug}/databases/${owner.database.id.toUpperCase()}/insights/query-performance?${window}`, { token: owner.token });
      // The gateway's figures of the load are written and stay; the server's are sampled on, so they are left out.
      const gatewayFigures = (answer: typeof byId) => {
        expect(answer.status, answer.text).to.equal(200);
        return answer.body.points.map((point: { proxyQueriesPerSecond: number; observerP99LatencyMs: number }) => [point.proxyQueriesPerSecond, point.observerP99LatencyMs]);
      };
      expect(gatewayFigures(byId)[0][0]).to.be.greaterThan(0);
      expect(gatewayFigures(byName)).to.deep.equal(gatewayFigures(byId));
      expect(gatewayFigures(upperCaseId)).to.deep.equal(gatewayFigures(byId));
    });

    it('answers 404 for a database of another workspace, an unknown database and an unknown tenant', async function () {
      const other = await developerWithReadyDatabase(p);
      const window = new URLSearchParams({ start, end: at(60) });
      expectApiError(await p.request('GET', `/workspaces/${owner.slug}/databases/${other.database.id}/insights/query-performance?${window}`, { token: owner.token }), 404, 'database_not_found');
      expectApiError(await p.request('GET', `/workspaces/${other.slug}/databases/${owner.database.id}/insights/query-performance?${window}`, { token: other.token }), 404, 'database_not_found');
      expectApiError(await p.request('GET', `/workspaces/${owner.slug}/databases/${randomUUID()}/insights/query-performance?${window}`, { token: owner.token }), 404, 'database_not_found');
      expectApiError(await p.request('GET', `${path}?${window}&tenantId=${randomUUID()}`, { token: owner.token }), 404, 'tenant_not_found');
      // By name: another workspace's database, a name nobody has, a name that could never be one.
      for (const [slug, name] of [[owner.slug, other.database.name], [owner.slug, 'no_such_database'], [owner.slug, 'not-a-name']]) {
        const answer = await p.request('GET', `/workspaces/${slug}/databases/${name}/insights/query-performance?${window}`, { token: owner.token });
        expect([answer.status, answer.body]).to.deep.equal([404, { errorCode: 'database_not_found', message: `Database '${name}' not found`, statusCode: 404 }]);
      }
    });

    it('answers a user token 403 developer_token_required', async function () {
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${fastTenant}`);
      expectApiError(await p.request('GET', `${path}?${new URLSearchParams({ start, end: at(60) })}`, { token: user.jwt }), 403, 'developer_token_required');
    });
  });
});
