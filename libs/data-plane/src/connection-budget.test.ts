import { expect } from 'chai';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type pg from 'pg';
import { DeadlineExceededError, withDeadline } from '@platform/deadline';
import { UnavailableError } from '@platform/domain';
import { eventually, rejection, startTestPostgres, withClient, type TestPostgres } from '@platform/testing';
import { ConnectionBudget, type ConnectionBudgetOptions } from './connection-budget.js';

// Against a real server: what PostgreSQL sees (pg_stat_activity) is what counts.
describe('ConnectionBudget', function () {
  let server: TestPostgres;
  let opened: ConnectionBudget[] = [];

  /** Distinct URLs on one cluster stand for distinct databases (application_name tells them apart). */
  function url(name: string): string {
    const parsed = new URL(server.urlFor('postgres'));
    parsed.searchParams.set('application_name', `budget_test_${name}`);
    return parsed.toString();
  }

  function budget(options: ConnectionBudgetOptions = {}): ConnectionBudget {
    const created = new ConnectionBudget(options);
    opened.push(created);
    return created;
  }

  /** Backends on the server whose application_name starts with `budget_test_<prefix>`. */
  function backends(prefix = ''): Promise<number> {
    return withClient(server.adminUrl, async (admin) => {
      const { rows } = await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where application_name like $1`, [`budget_test_${prefix}%`]);
      return rows[0].n;
    });
  }

  async function pid(connections: ConnectionBudget, name: string): Promise<number> {
    const { rows } = await connections.queryable(url(name)).query<{ pid: number }>('select pg_backend_pid() as pid');
    return rows[0].pid;
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
    await eventually(async () => ((await backends()) === 0 ? true : undefined), 5_000, 'every test connection to close');
  });

  it('reuses a database’s connection from one query to the next, and keeps it after an SQL error', async function () {
    const connections = budget();
    const first = await pid(connections, 'reuse');
    expect(await pid(connections, 'reuse')).to.equal(first);
    const error = await rejection(connections.queryable(url('reuse')).query('select 1/0'));
    expect(error).to.include({ code: '22012' });
    expect(await pid(connections, 'reuse')).to.equal(first);
    expect(connections.usage(url('reuse'))).to.deep.equal({ open: 1, idle: 1, waiting: 0 });
  });

  it('never opens more than the cluster’s budget, however many databases ask at once, and serves them all', async function () {
    const connections = budget({ connectionsPerCluster: 3, connectionsPerDatabase: 4 });
    let most = 0;
    const watching = (async () => {
      for (let i = 0; i < 20; i++) {
        most = Math.max(most, await backends('cap'));
        await sleep(25);
      }
    })();
    const names = ['cap_a', 'cap_b', 'cap_c', 'cap_d', 'cap_e'];
    const results = await Promise.all(names.flatMap((name) => [1, 2].map(() => connections.queryable(url(name)).query<{ one: number }>('select 1 as one from pg_sleep(0.1)'))));
    await watching;
    expect(results.map((result) => result.rows[0].one)).to.deep.equal(Array(10).fill(1));
    expect(most).to.be.within(1, 3);
    expect(connections.usage(url('cap_a')).open).to.be.at.most(3);
  });

  it('queues a database’s requests beyond connectionsPerDatabase, first come first served', async function () {
    const connections = budget({ connectionsPerDatabase: 2 });
    const pool = connections.queryable(url('limit'));
    const held = await Promise.all([pool.connect(), pool.connect()]);
    const order: string[] = [];
    const third = pool.connect().then((client) => (order.push('third'), client));
    const fourth = pool.connect().then((client) => (order.push('fourth'), client));
    await sleep(50);
    expect(order).to.deep.equal([]);
    expect(connections.usage(url('limit'))).to.deep.equal({ open: 2, idle: 0, waiting: 2 });
    held[0].release();
    const next = await third;
    expect(next).to.equal(held[0]); // the same connection, handed on
    held[1].release();
    (await fourth).release();
    next.release();
    expect(order).to.deep.equal(['third', 'fourth']);
    expect(await backends('limit')).to.equal(2);
  });

  it('gives a freed connection to a waiting database that holds none, closing the hog’s idle one for it', async function () {
    const connections = budget({ connectionsPerCluster: 2, connectionsPerDatabase: 2 });
    const hog = connections.queryable(url('fair_hog'));
    const held = await Promise.all([hog.connect(), hog.connect()]);
    const order: string[] = [];
    const hogsNext = hog.connect().then((client) => (order.push('hog'), client));
    const other = connections.queryable(url('fair_other')).connect().then((client) => (order.push('other'), client));
    await sleep(50);
    held[0].release();
    const served = await other;
    expect(order).to.deep.equal(['other']);
    await eventually(async () => ((await backends('fair_hog')) === 1 ? true : undefined), 5_000, 'the hog’s idle connection to close');
    expect(await backends('fair_other')).to.equal(1);
    held[1].release(); // the hog's own waiter reuses it
    (await hogsNext).release();
    served.release();
    expect(order).to.deep.equal(['other', 'hog']);
    expect(connections.usage(url('fair_hog')).open).to.equal(2);
  });

  it('shrinks an idle database connection by connection to make room, not a whole database at once', async function () {
    const connections = budget({ connectionsPerCluster: 3, connectionsPerDatabase: 3 });
    const busy = connections.queryable(url('shrink_a'));
    const clients = await Promise.all([busy.connect(), busy.connect(), busy.connect()]);
    for (const client of clients) client.release();
    expect(await backends('shrink_a')).to.equal(3);
    await pid(connections, 'shrink_b');
    await eventually(async () => ((await backends('shrink_a')) === 2 ? true : undefined), 5_000, 'one of a’s connections to close');
    expect(await backends('shrink_b')).to.equal(1);
    expect(connections.usage(url('shrink_a'))).to.deep.equal({ open: 3, idle: 3, waiting: 0 });
  });

  it('lets databases that hold connections reuse their own rather than trade them', async function () {
    const connections = budget({ connectionsPerCluster: 3, connectionsPerDatabase: 2 });
    const [a, b] = [connections.queryable(url('keep_a')), connections.queryable(url('keep_b'))];
    const heldA = await Promise.all([a.connect(), a.connect()]);
    const heldB = await b.connect();
    const pids = async (client: pg.PoolClient) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    const bFirst = await pids(heldB);
    // b waits for a second connection; a's waiter too. a frees one: a reuses it, b keeps waiting.
    const bNext = b.connect();
    const aNext = a.connect();
    await sleep(30);
    heldA[0].release();
    const again = await aNext;
    expect(again).to.equal(heldA[0]);
    expect(connections.usage(url('keep_a'))).to.deep.equal({ open: 3, idle: 0, waiting: 1 });
    heldB.release();
    const second = await bNext;
    expect(await pids(second)).to.equal(bFirst);
    for (const client of [again, heldA[1], second]) client.release();
  });

  it('closes no other database’s freshly idle connection for one that holds some: it waits for its own', async function () {
    const connections = budget({ connectionsPerCluster: 2, connectionsPerDatabase: 2 });
    const [a, b] = [connections.queryable(url('rest_a')), connections.queryable(url('rest_b'))];
    await pid(connections, 'rest_b'); // b's connection, idle from now on
    const held = await a.connect();
    const second = a.connect();
    await sleep(50);
    expect(connections.usage(url('rest_a'))).to.deep.equal({ open: 2, idle: 1, waiting: 1 });
    held.release();
    expect(await second).to.equal(held);
    (await second).release();
    expect(await backends('rest_b')).to.equal(1);
    // At rest (unused for a second), b's connection may go: a's two at once then fit.
    await sleep(1_100);
    const both = await Promise.all([a.connect(), a.connect()]);
    for (const client of both) client.release();
    await eventually(async () => ((await backends('rest_b')) === 0 ? true : undefined), 5_000, 'b’s resting connection to close');
    expect(await backends('rest_a')).to.equal(2);
    expect((await b.query<{ one: number }>('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
  });

  it('keeps at most activePerCluster connections in use at once, the others waiting their turn', async function () {
    const connections = budget({ activePerCluster: 2 });
    const [a, b, c] = ['active_a', 'active_b', 'active_c'].map((name) => connections.queryable(url(name)));
    const held = await Promise.all([a.connect(), b.connect()]);
    let third: pg.PoolClient | undefined;
    const waiting = c.connect().then((client) => (third = client));
    await sleep(50);
    expect(third).to.equal(undefined);
    expect(connections.usage(url('active_c'))).to.deep.equal({ open: 2, idle: 0, waiting: 1 });
    held[0].release();
    await waiting;
    expect(await backends('active_c')).to.equal(1);
    for (const client of [held[1], third!]) client.release();
  });

  it('answers busy at once past queuePerDatabase, and after waitMs in the queue', async function () {
    const connections = budget({ connectionsPerDatabase: 1, queuePerDatabase: 1, waitMs: 200 });
    const pool = connections.queryable(url('busy'));
    const held = await pool.connect();
    const waiting = rejection(pool.connect());
    const refused = await rejection(pool.query('select 1'));
    expect(refused).to.be.instanceOf(UnavailableError);
    expect(refused).to.include({ code: 'database_busy', message: 'The database is at its connection limit (too many requests waiting for it); try again shortly' });
    const timedOut = await waiting;
    expect(timedOut).to.include({ code: 'database_busy', message: 'The database is at its connection limit (no connection free within 200 ms); try again shortly' });
    expect(connections.usage(url('busy')).waiting).to.equal(0);
    held.release();
    expect((await pool.query<{ one: number }>('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
  });

  it('closes a connection idle for idleMs, and never reuses one the server ended', async function () {
    const connections = budget({ idleMs: 200 });
    const first = await pid(connections, 'ended');
    await withClient(server.adminUrl, (admin) => admin.query('select pg_terminate_backend($1)', [first]));
    await eventually(async () => (connections.usage(url('ended')).open === 0 ? true : undefined), 5_000, 'the ended connection to leave');
    const second = await pid(connections, 'ended');
    expect(second).to.not.equal(first);
    await eventually(async () => ((await backends('ended')) === 0 ? true : undefined), 5_000, 'the idle connection to close');
    expect(connections.usage(url('ended'))).to.deep.equal({ open: 0, idle: 0, waiting: 0 });
  });

  it('closes a connection given back with a connection error, and opens a fresh one', async function () {
    const connections = budget();
    const pool = connections.queryable(url('broken'));
    const client: pg.PoolClient = await pool.connect();
    const first = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    client.release(new Error('the caller saw the connection fail'));
    expect(connections.usage(url('broken')).open).to.equal(0);
    expect(await pid(connections, 'broken')).to.not.equal(first);
  });

  it('hands a request waiting behind a query cut by its deadline a working connection, never the cut one', async function () {
    const connections = budget({ connectionsPerDatabase: 1 });
    const pool = connections.queryable(url('cut'));
    const cutRequest = withDeadline(300, async () => {
      const client = await pool.connect();
      try {
        return await client.query('select pg_sleep(30)');
      } finally {
        // Released in the same promise chain as the cut, as inTransaction does.
        client.release();
      }
    });
    const waiting = pool.connect();
    expect(await rejection(cutRequest)).to.be.instanceOf(DeadlineExceededError);
    const next = await waiting;
    try {
      expect((await next.query<{ one: number }>('select 1 as one')).rows[0].one).to.equal(1);
    } finally {
      next.release();
    }
    expect(connections.usage(url('cut'))).to.deep.equal({ open: 1, idle: 1, waiting: 0 });
  });

  /** A peer that accepts connections and never says a word: a server too loaded to finish logins. */
  async function silentPeer() {
    const sockets: Socket[] = [];
    const peer = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    const base = `postgres://nobody:secret@127.0.0.1:${(peer.address() as AddressInfo).port}`;
    /** Drops every connection accepted so far: their logins fail. */
    const hangUp = () => {
      for (const socket of sockets) socket.destroy();
    };
    return {
      sockets,
      url: (database: string) => `${base}/${database}`,
      hangUp,
      close: async () => {
        hangUp();
        await new Promise((resolve) => peer.close(resolve));
      },
    };
  }

  it('answers unavailable (not busy: no limit was reached) when a server takes longer than connectTimeoutMs to let it in, and counts nothing for it', async function () {
    const silent = await silentPeer();
    try {
      const connections = budget({ connectTimeoutMs: 200 });
      const error = await rejection(connections.queryable(silent.url('none')).query('select 1'));
      expect(error).to.be.instanceOf(UnavailableError);
      expect(error).to.include({ code: 'database_unavailable', message: 'The database is unavailable (the server did not finish a login within 200 ms); try again shortly' });
      expect(connections.usage(silent.url('none'))).to.deep.equal({ open: 0, idle: 0, waiting: 0 });
    } finally {
      await silent.close();
    }
  });

  it('starts at most openingPerCluster logins at once; the others wait in their queues and start as logins end', async function () {
    const silent = await silentPeer();
    try {
      const connections = budget({ openingPerCluster: 2, connectTimeoutMs: 30_000, waitMs: 30_000 });
      const asked = [1, 2, 3, 4, 5].map((i) => rejection(connections.queryable(silent.url(`db${i}`)).query('select 1')));
      const accepted = (n: number) => eventually(async () => (silent.sockets.length === n ? true : undefined), 5_000, `${n} logins under way`);
      await accepted(2);
      await sleep(100);
      expect(silent.sockets.length, 'no third login while two are under way').to.equal(2);
      expect(connections.usage(silent.url('db1'))).to.deep.equal({ open: 2, idle: 0, waiting: 3 });
      silent.hangUp();
      await accepted(4);
      expect(connections.usage(silent.url('db1'))).to.deep.equal({ open: 2, idle: 0, waiting: 1 });
      silent.hangUp();
      await accepted(5);
      silent.hangUp();
      const errors = await Promise.all(asked);
      // Each login failed as the peer hung up on it: a connection error, never a busy answer from the queue.
      expect(errors.map((error) => (error as Error).message)).to.deep.equal(Array(5).fill('Connection terminated unexpectedly'));
      expect(connections.usage(silent.url('db1'))).to.deep.equal({ open: 0, idle: 0, waiting: 0 });
    } finally {
      await silent.close();
    }
  });

  it('with one login at a time, answers every database asked at once', async function () {
    const connections = budget({ openingPerCluster: 1 });
    const answers = await Promise.all(['one_a', 'one_b', 'one_c'].map((name) => connections.queryable(url(name)).query<{ one: number }>('select 1 as one')));
    expect(answers.map((answer) => answer.rows)).to.deep.equal([[{ one: 1 }], [{ one: 1 }], [{ one: 1 }]]);
    expect(await backends('one_')).to.equal(3);
  });

  it('after close(), answers unavailable and leaves nothing open', async function () {
    const connections = budget();
    await pid(connections, 'closing');
    await connections.close();
    expect(await rejection(connections.queryable(url('closing')).query('select 1'))).to.include({ code: 'database_unavailable', message: 'The database is unavailable (the platform is stopping); try again shortly' });
    await eventually(async () => ((await backends('closing')) === 0 ? true : undefined), 5_000, 'the connection to close');
  });
});
