import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { LatencyHistogram, type QueryMinute } from '@platform/domain';
import { startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlQueryMinutes } from './query-minutes.store.js';

describe('SqlQueryMinutes', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let store: SqlQueryMinutes;
  const t0 = new Date('2026-11-22T12:00:00Z');
  const minute = (n: number) => new Date(t0.getTime() + n * 60_000);

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    store = new SqlQueryMinutes(controlPlane.orm);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  function row(databaseId: string, n: number, queries: number, latencyMicros: number, tenantId: string | null = null): QueryMinute {
    const histogram = new LatencyHistogram();
    for (let i = 0; i < queries; i++) histogram.recordMicros(latencyMicros);
    return { databaseId, tenantId, minute: minute(n), queries, errors: 0, totalMs: (queries * latencyMicros) / 1000, latency: histogram.toArrays() };
  }

  it('adds two gateways’ minutes up per bucket, with every bucket present, and merges their histograms', async function () {
    const database = randomUUID();
    await store.save(randomUUID(), [row(database, 0, 90, 1_000), row(database, 2, 10, 1_000)]);
    await store.save(randomUUID(), [row(database, 0, 10, 80_000)]);
    const buckets = await store.buckets({ databaseId: database, start: minute(0), end: minute(4), granularitySeconds: 60 });
    expect(buckets.map((bucket) => [bucket.start.toISOString(), bucket.queries, bucket.latency.total])).to.deep.equal([
      [minute(0).toISOString(), 100, 100],
      [minute(1).toISOString(), 0, 0],
      [minute(2).toISOString(), 10, 10],
      [minute(3).toISOString(), 0, 0],
    ]);
    // 90 fast and 10 slow: the 99th value is a slow one, whichever gateway saw it.
    expect(buckets[0].latency.percentileMs(0.99)).to.be.closeTo(80, 80 / 64);
    expect(buckets[0].latency.percentileMs(0.9)).to.be.closeTo(1, 1 / 64);
  });

  it('replaces a gateway’s own row of a minute when it writes it again', async function () {
    const database = randomUUID();
    const gateway = randomUUID();
    await store.save(gateway, [row(database, 0, 5, 1_000)]);
    await store.save(gateway, [row(database, 0, 12, 1_000)]);
    const [bucket] = await store.buckets({ databaseId: database, start: minute(0), end: minute(1), granularitySeconds: 60 });
    expect(bucket.queries).to.equal(12);
  });

  it('rolls minutes into coarser buckets that agree with them: five 1m buckets sum to the 5m one', async function () {
    const database = randomUUID();
    await store.save(randomUUID(), [0, 1, 2, 3, 4, 5, 7].map((n) => row(database, n, n + 1, 1_000 * (n + 1))));
    const fine = await store.buckets({ databaseId: database, start: minute(0), end: minute(10), granularitySeconds: 60 });
    const coarse = await store.buckets({ databaseId: database, start: minute(0), end: minute(10), granularitySeconds: 300 });
    expect(coarse.map((bucket) => bucket.queries)).to.deep.equal([0, 5].map((from) => fine.slice(from, from + 5).reduce((sum, bucket) => sum + bucket.queries, 0)));
    expect(coarse.map((bucket) => bucket.queries)).to.deep.equal([15, 14]);
    expect(coarse[0].latency.total).to.equal(15);
  });

  it('counts one tenant’s minutes when asked, and every tenant’s otherwise; other databases never', async function () {
    const database = randomUUID();
    const tenant = randomUUID();
    await store.save(randomUUID(), [row(database, 0, 3, 1_000, tenant), row(database, 0, 4, 1_000, randomUUID()), row(database, 0, 5, 1_000), row(randomUUID(), 0, 100, 1_000)]);
    const all = await store.buckets({ databaseId: database, start: minute(0), end: minute(1), granularitySeconds: 60 });
    const one = await store.buckets({ databaseId: database, tenantId: tenant, start: minute(0), end: minute(1), granularitySeconds: 60 });
    expect([all[0].queries, one[0].queries]).to.deep.equal([12, 3]);
  });
});
