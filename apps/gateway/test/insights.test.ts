// The gateway's side of query insights: what it writes to the control plane, and when.
import { expect } from 'chai';
import { eventually, query } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestDatabase } from './support/platform.js';

describe('gateway: query minutes for insights', function () {
  this.timeout(60_000);
  let p: GatewayPlatform;
  let database: TestDatabase;

  before(async function () {
    // This file's gateway writes its minutes every 300 ms.
    p = await startGatewayPlatform({ GATEWAY_INSIGHTS_FLUSH_MS: '300' });
    database = await p.newDatabase();
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  const written = async () =>
    (await query<{ gateways: number; queries: number; errors: number }>(
      p.controlPlane.url,
      `select count(distinct gateway_id)::int as gateways, coalesce(sum(queries), 0)::int as queries, coalesce(sum(errors), 0)::int as errors
       from query_minutes where database_id = $1`,
      [database.id],
    ))[0];

  it('writes each gateway’s minutes as rows of its own, which add up; one that stops writes what it counted last', async function () {
    const credential = await database.newCredential();
    // A second gateway that would not write for a minute: only its stop does.
    const other = await p.startAnotherGateway({ GATEWAY_INSIGHTS_FLUSH_MS: '60000' });
    try {
      const here = await connectVerified(p, credential);
      const there = await connectVerified(p, credential, { port: other.port });
      for (let i = 0; i < 40; i++) await here.query('select $1::int', [i]);
      for (let i = 0; i < 60; i++) await there.query('select $1::int', [i]);
      await there.query('select 1/0').catch(() => undefined);
      await Promise.all([here.end(), there.end()]);
      expect(await eventually(async () => ((await written()).queries === 40 ? true : undefined), 10_000, 'the first gateway’s flush')).to.equal(true);
      await other.process.stop();
    } finally {
      await other.process.stop();
    }
    expect(await written()).to.deep.equal({ gateways: 2, queries: 101, errors: 1 });
  });
});
