import { expect } from 'chai';
import { eventually, query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { openOrm, type MikroORM } from '../orm.js';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { ControlPlaneCancelRelay } from './gateway-cancel-relay.js';

describe('ControlPlaneCancelRelay', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let orm: MikroORM;
  const relays: ControlPlaneCancelRelay[] = [];

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    orm = await openOrm({ databaseUrl: controlPlane.url });
  });

  after(async function () {
    await Promise.all(relays.map((relay) => relay.stop()));
    await orm?.close();
    await controlPlane?.close();
    await server?.stop();
  });

  it('passes a cancel request from one gateway to every gateway, and ignores payloads that are no cancel', async function () {
    const heard: [string, number, string][] = [];
    for (const name of ['a', 'b']) {
      const relay = new ControlPlaneCancelRelay(orm, controlPlane.url, { cancel: (processId, key) => heard.push([name, processId, key.toString('hex')]), lost: () => {} });
      await relay.start();
      relays.push(relay);
    }
    await query(controlPlane.url, "select pg_notify('gateway_cancel', 'not a cancel'), pg_notify('gateway_cancel', '12:abc'), pg_notify('gateway_cancel', '12:')");
    await relays[0].publish(4242, Buffer.from([0xde, 0xad, 0xbe, 0xef]));
    await eventually(async () => (heard.length >= 2 ? true : undefined), 5_000, 'both gateways to hear it');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard.sort()).to.deep.equal([
      ['a', 4242, 'deadbeef'],
      ['b', 4242, 'deadbeef'],
    ]);
  });
});
