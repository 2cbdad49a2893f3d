import { expect } from 'chai';
import { eventually, httpClient, query, withClient } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { developerWithReadyDatabase } from './support/fixtures.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';

/**
 * The API's connections to platform databases under a budget (README, "Connections to platform
 * databases"): an API of its own with a budget of 2 per cluster, 1 per database and no queue. A
 * database whose one connection is stuck (its table locked from outside) answers busy, 503 with
 * Retry-After, while another database of the same cluster goes on answering.
 */
describe('the connection budget', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let api: RunningApi;
  let request: ReturnType<typeof httpClient>;

  before(async function () {
    p = await platform();
    api = await startApi(
      loadApiConfig({ ...p.env, DATA_PLANE_CONNECTION_BUDGET: '2', DATA_PLANE_POOL_SIZE: '1', DATA_PLANE_QUEUE: '0', REVOCATION_POLL_MS: '60000' }),
    );
    request = httpClient(api.url);
  });

  after(async function () {
    this.timeout(90_000);
    await api?.close();
  });

  /** Sessions of the databases' service roles (the API's connections to them), as PostgreSQL counts them. */
  async function serviceSessions(databases: string[]): Promise<number> {
    const [{ n }] = await query<{ n: number }>(p.postgres.adminUrl, `select count(*)::int as n from pg_stat_activity where datname = any($1::text[]) and usename = datname || '_service'`, [databases]);
    return n;
  }

  it('one database stuck on its connection answers 503 database_busy; another of the cluster still answers', async function () {
    const hog = await developerWithReadyDatabase(p);
    const other = await developerWithReadyDatabase(p);
    expect((await request('GET', `${hog.D}/tenants`, { token: hog.token })).status).to.equal(200);
    expect((await request('GET', `${other.D}/tenants`, { token: other.token })).status).to.equal(200);

    const hogName = await physicalNameOf(p, hog.database.id);
    const names = [hogName, await physicalNameOf(p, other.database.id)];
    expect(await serviceSessions(names)).to.equal(2);
    await withClient(p.postgres.urlFor(hogName), async (locker) => {
      await locker.query('begin');
      await locker.query('lock table public.tenants in access exclusive mode');
      // The hog's one connection waits on the lock, checked out.
      const stuck = request('GET', `${hog.D}/tenants`, { token: hog.token });
      await eventually(
        async () => {
          const [{ n }] = await query<{ n: number }>(p.postgres.adminUrl, `select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'`, [hogName]);
          return n === 1 ? true : undefined;
        },
        10_000,
        'the hog’s request to wait on the lock',
      );

      const refused = await request('GET', `${hog.D}/tenants`, { token: hog.token });
      expect(refused.status).to.equal(503);
      expect(refused.headers.get('retry-after')).to.equal('1');
      expect(refused.body).to.deep.equal({
        errorCode: 'database_busy',
        message: 'The database is at its connection limit (too many requests waiting for it); try again shortly',
        statusCode: 503,
      });
      for (let i = 0; i < 3; i++) {
        const served = await request('GET', `${other.D}/tenants`, { token: other.token });
        expect(served.status, served.text).to.equal(200);
      }
      await locker.query('rollback');
      const answered = await stuck;
      expect(answered.status).to.equal(200);
    });
    // One connection each, the budget of 2, however many requests came.
    expect(await serviceSessions(names)).to.equal(2);
  });
});
