import { expect } from 'chai';
import type pg from 'pg';
import { DataPlanePools } from './pools.js';
import { eventually, startTestPostgres, type TestPostgres } from '@platform/testing';

// Real pools against a real server.
describe('DataPlanePools', function () {
  let server: TestPostgres;
  let opened: DataPlanePools[] = [];

  /** Distinct URLs of the same database: each is a pool of its own. */
  function url(name: string): string {
    const parsed = new URL(server.urlFor('postgres'));
    parsed.searchParams.set('application_name', `pools_test_${name}`);
    return parsed.toString();
  }

  function pools(options: ConstructorParameters<typeof DataPlanePools>[0] = {}): DataPlanePools {
    const created = new DataPlanePools(options);
    opened.push(created);
    return created;
  }

  async function works(pool: pg.Pool): Promise<void> {
    const { rows } = await pool.query<{ one: number }>('select 1 as one');
    expect(rows[0].one).to.equal(1);
  }

  /** Backends on the server with that application_name, as PostgreSQL itself sees them. */
  async function backends(name: string, via: pg.Pool): Promise<number> {
    const { rows } = await via.query<{ count: string }>('select count(*) from pg_stat_activity where application_name = $1', [`pools_test_${name}`]);
    return Number(rows[0].count);
  }

  before(async function () {
    this.timeout(120_000);
    server = await startTestPostgres();
  });

  after(async function () {
    await server?.stop();
  });

  afterEach(async function () {
    await Promise.all(opened.map((created) => created.close()));
    opened = [];
  });

  it('keeps one pool per URL and hands the same one out again', async function () {
    const subject = pools();
    const a = subject.pool(url('a'));
    expect(subject.pool(url('a'))).to.equal(a);
    const b = subject.pool(url('b'));
    expect(b).to.not.equal(a);
    expect(subject.size).to.equal(2);
    await works(a);
    await works(subject.pool(url('a')));
    await works(b);
    expect(subject.size).to.equal(2);
  });

  it('sizes each pool with connectionsPerDatabase', async function () {
    const subject = pools({ connectionsPerDatabase: 2 });
    const pool = subject.pool(url('sized'));
    const clients = await Promise.all([pool.connect(), pool.connect()]);
    const third = pool.connect();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pool.totalCount).to.equal(2);
    expect(pool.waitingCount).to.equal(1);
    clients[0].release();
    (await third).release();
    clients[1].release();
  });

  it('past maxPools, ends the least recently used pool', async function () {
    const subject = pools({ maxPools: 2 });
    const a = subject.pool(url('lru_a'));
    const b = subject.pool(url('lru_b'));
    await Promise.all([works(a), works(b)]);
    subject.pool(url('lru_a')); // a is now the most recently used
    const c = subject.pool(url('lru_c'));
    await works(c);
    expect(subject.size).to.equal(2);
    expect(b.ending, 'b ended').to.equal(true);
    expect(a.ending, 'a kept').to.equal(false);
    await eventually(async () => (b.ended ? true : undefined), 5_000, 'b to end');
    await eventually(async () => ((await backends('lru_b', c)) === 0 ? true : undefined), 5_000, 'b’s backend to go');
    // The kept pool still works, and asking for b again opens a new pool.
    expect(subject.pool(url('lru_a'))).to.equal(a);
    await works(a);
    const again = subject.pool(url('lru_b'));
    expect(again).to.not.equal(b);
    await works(again);
    expect(subject.size).to.equal(2);
    expect(a.ending, 'a evicted by b’s return').to.equal(false);
    expect(c.ending, 'c was the least recently used').to.equal(true);
  });

  it('past maxPools, keeps a busy pool open (a request is using it) and evicts it once idle', async function () {
    const subject = pools({ maxPools: 1 });
    const busy = subject.pool(url('busy_a'));
    const client = await busy.connect();
    const other = subject.pool(url('busy_b'));
    await works(other);
    expect(busy.ending, 'a pool with a connection checked out is not ended').to.equal(false);
    expect((await client.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
    client.release();
    subject.pool(url('busy_c'));
    expect(busy.ending, 'idle now, it is the least recently used').to.equal(true);
  });

  it('close() ends every pool', async function () {
    const subject = pools();
    const all = [subject.pool(url('close_a')), subject.pool(url('close_b')), subject.pool(url('close_c'))];
    await Promise.all(all.map(works));
    await subject.close();
    expect(subject.size).to.equal(0);
    for (const pool of all) expect(pool.ended).to.equal(true);
  });

  it('closes a pool nobody has asked for within idleMs, but not one with a connection checked out', async function () {
    const subject = pools({ idleMs: 100 });
    const idle = subject.pool(url('idle'));
    const busy = subject.pool(url('busy'));
    await works(idle);
    const client = await busy.connect();
    try {
      await eventually(async () => (idle.ended ? true : undefined), 5_000, 'the idle pool to close');
      expect(subject.size).to.equal(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(busy.ending, 'a pool with a client checked out stays').to.equal(false);
    } finally {
      client.release();
    }
    await eventually(async () => (busy.ended ? true : undefined), 5_000, 'the busy pool to close once released');
    expect(subject.size).to.equal(0);
  });
});
