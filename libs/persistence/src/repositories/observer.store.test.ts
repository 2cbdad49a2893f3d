import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { AdvisoryLeader } from './advisory-leader.js';
import { SqlObserverStore } from './observer.store.js';

describe('SqlObserverStore and AdvisoryLeader', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let store: SqlObserverStore;
  const minute = new Date('2026-11-22T12:00:00Z');

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    store = new SqlObserverStore(controlPlane.orm);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  async function minuteOf(databaseId: string) {
    const rows = await query(controlPlane.url, `select statements::int, cpu_ms from observer_minutes where database_id = $1 and minute = $2`, [databaseId, minute]);
    return rows[0];
  }

  it('adds every sample to its minute, keeping what is known when a sample does not know', async function () {
    const database = randomUUID();
    await store.add([{ databaseId: database, minute, statements: 5, cpuMs: 20 }]);
    await store.add([{ databaseId: database, minute, statements: 7, cpuMs: null }]);
    await store.add([{ databaseId: database, minute, statements: null, cpuMs: 30 }]);
    expect(await minuteOf(database)).to.deep.equal({ statements: 12, cpu_ms: 50 });
    const unknown = randomUUID();
    await store.add([{ databaseId: unknown, minute, statements: null, cpuMs: null }]);
    expect(await minuteOf(unknown)).to.deep.equal({ statements: null, cpu_ms: null });
  });

  it('lets one holder of the lock lead at a time, and hands it on when the holder goes', async function () {
    const key = 42_4242;
    const first = new AdvisoryLeader(controlPlane.url, key);
    const second = new AdvisoryLeader(controlPlane.url, key);
    try {
      expect(await first.isLeader()).to.equal(true);
      expect(await second.isLeader()).to.equal(false);
      expect(await first.isLeader()).to.equal(true);
      await first.close();
      expect(await second.isLeader()).to.equal(true);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
