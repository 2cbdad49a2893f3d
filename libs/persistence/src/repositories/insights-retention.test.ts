import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { LatencyHistogram, type QueryMinute } from '@platform/domain';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlInsightsRetention } from './insights-retention.js';
import { SqlObserverStore } from './observer.store.js';
import { SqlQueryMinutes } from './query-minutes.store.js';

const DAY = 86_400_000;

describe('SqlInsightsRetention', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let minutes: SqlQueryMinutes;
  let observer: SqlObserverStore;
  let retention: SqlInsightsRetention;
  const now = new Date('2026-11-22T12:34:00Z');
  const keep = { minuteDays: 8, hourDays: 95, dayDays: 800 };

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    minutes = new SqlQueryMinutes(controlPlane.orm);
    observer = new SqlObserverStore(controlPlane.orm);
    retention = new SqlInsightsRetention(controlPlane.orm);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  function row(databaseId: string, minute: Date, queries: number, latencyMicros: number): QueryMinute {
    const histogram = new LatencyHistogram();
    for (let i = 0; i < queries; i++) histogram.recordMicros(latencyMicros);
    return { databaseId, tenantId: null, minute, queries, errors: 1, totalMs: queries, latency: histogram.toArrays() };
  }

  const count = async (table: string, databaseId: string) =>
    (await query<{ n: number }>(controlPlane.url, `select count(*)::int as n from ${table} where database_id = $1`, [databaseId]))[0].n;

  it('moves old minutes into hours and old hours into days, and reads the same figures afterwards', async function () {
    const database = randomUUID();
    // Ten days ago (minutes to roll into one hour), a hundred days ago (to roll on into a day), and now.
    const tenDaysAgo = new Date(Date.UTC(2026, 10, 12, 9, 0));
    const hundredDaysAgo = new Date(now.getTime() - 100 * DAY);
    const oldDay = new Date(Math.floor(hundredDaysAgo.getTime() / DAY) * DAY);
    const gateway = randomUUID();
    await minutes.save(gateway, [
      row(database, tenDaysAgo, 90, 1_000),
      row(database, new Date(tenDaysAgo.getTime() + 59 * 60_000), 10, 100_000),
      row(database, new Date(oldDay.getTime() + 3 * 3_600_000), 7, 2_000),
      row(database, new Date(oldDay.getTime() + 20 * 3_600_000), 3, 2_000),
      row(database, new Date('2026-11-22T12:00:00Z'), 5, 1_000),
    ]);
    await observer.add([
      { databaseId: database, minute: tenDaysAgo, statements: 4, cpuMs: 10 },
      { databaseId: database, minute: new Date(tenDaysAgo.getTime() + 60_000), statements: 6, cpuMs: null },
    ]);
    const read = async () => {
      const hour = await minutes.buckets({ databaseId: database, start: tenDaysAgo, end: new Date(tenDaysAgo.getTime() + 3_600_000), granularitySeconds: 3_600 });
      const day = await minutes.buckets({ databaseId: database, start: oldDay, end: new Date(oldDay.getTime() + DAY), granularitySeconds: 86_400 });
      return {
        hour: [hour[0].queries, hour[0].latency.percentileMs(0.99), hour[0].statements, hour[0].cpuMs],
        day: [day[0].queries, day[0].latency.total],
      };
    };
    const before = await read();
    expect(before).to.deep.equal({ hour: [100, before.hour[1], 10, 10], day: [10, 10] });
    expect(before.hour[1]).to.be.closeTo(100, 2);

    await retention.rollUp(now, keep);

    expect(await read()).to.deep.equal(before);
    expect(await count('query_minutes', database)).to.equal(1);
    const rolled = await query(controlPlane.url, `select resolution, period, queries::int, errors::int from query_rollups where database_id = $1 order by period`, [database]);
    expect(rolled).to.deep.equal([
      { resolution: '1d', period: oldDay, queries: 10, errors: 2 },
      { resolution: '1h', period: tenDaysAgo, queries: 100, errors: 2 },
    ]);
    expect(await count('observer_minutes', database)).to.equal(0);
    // Rolling again changes nothing.
    await retention.rollUp(now, keep);
    expect(await read()).to.deep.equal(before);
  });

  it('deletes days past their retention', async function () {
    const database = randomUUID();
    await minutes.save(randomUUID(), [row(database, new Date(now.getTime() - 900 * DAY), 1, 1_000)]);
    await retention.rollUp(now, keep);
    expect(await count('query_minutes', database)).to.equal(0);
    expect(await count('query_rollups', database)).to.equal(0);
  });
});
