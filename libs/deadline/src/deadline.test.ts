import { expect } from 'chai';
import pg from 'pg';
import { deferred, eventually, rejection, startTestPostgres, withClient, type TestPostgres } from '@platform/testing';
import { beforeDeadline, DEADLINE_EXCEEDED, DeadlineExceededError, remainingMs, withDeadline, withoutDeadline } from './deadline.js';
import { honourDeadlines } from './pool-deadline.js';
import { cutQueriesAtDeadline } from './query-deadline.js';

describe('deadlines', function () {
  describe('withDeadline', function () {
    it('carries the deadline through awaits, takes the sooner of nested ones, and withoutDeadline drops it', async function () {
      expect(remainingMs()).to.equal(undefined);
      await withDeadline(5_000, async () => {
        // A timer may fire a millisecond early, so the bound is the time measured, not the 10 asked for.
        const started = Date.now();
        await new Promise((resolve) => setTimeout(resolve, 10));
        const waited = Date.now() - started;
        expect(waited).to.be.above(0);
        expect(remainingMs()).to.be.within(4_000, 5_000 - waited);
        await withDeadline(60_000, async () => expect(remainingMs()).to.be.at.most(5_000));
        await withDeadline(1_000, async () => expect(remainingMs()).to.be.at.most(1_000));
        withoutDeadline(() => expect(remainingMs()).to.equal(undefined));
      });
    });
  });

  describe('beforeDeadline', function () {
    it('gives up at the deadline and hands what comes later to `late`', async function () {
      const pending = deferred<string>();
      const late = deferred<string>();
      const cut = await withDeadline(50, () => rejection(beforeDeadline('a wait', pending.promise, late.resolve)));
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      expect((cut as DeadlineExceededError).code).to.equal(DEADLINE_EXCEEDED);
      pending.resolve('a connection');
      expect(await late.promise).to.equal('a connection');
    });

    it('is the wait itself outside any deadline', async function () {
      const pending = Promise.resolve(42);
      expect(beforeDeadline('a wait', pending)).to.equal(pending);
    });
  });

  describe('cutQueriesAtDeadline (real PostgreSQL)', function () {
    this.timeout(60_000);
    let postgres: TestPostgres;
    const clients: pg.Client[] = [];

    async function connect(): Promise<pg.Client> {
      const client = cutQueriesAtDeadline(new pg.Client({ connectionString: postgres.adminUrl }));
      client.on('error', () => {});
      clients.push(client);
      await client.connect();
      return client;
    }

    before(async function () {
      postgres = await startTestPostgres();
    });

    after(async function () {
      for (const client of clients) await client.end().catch(() => {});
      await postgres?.stop();
    });

    it('cuts a query that outlives its deadline client-side and destroys its connection', async function () {
      const client = await connect();
      const started = performance.now();
      // A query that does not answer in time stands in for a server that does not answer at all.
      const cut = await withDeadline(300, () => rejection(client.query('select pg_sleep(30)')));
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      expect(performance.now() - started).to.be.within(250, 5_000);
      // Never reused: the connection is gone, whatever its server does later.
      const next = await Promise.race([
        client.query('select 1').then(
          () => 'answered',
          () => 'refused',
        ),
        new Promise((resolve) => setTimeout(() => resolve('waiting behind the cut query'), 5_000)),
      ]);
      expect(next).to.equal('refused');
    });

    /** Backends running a statement that contains `marker`. */
    function running(marker: string): Promise<number> {
      return withClient(postgres.adminUrl, async (other) => {
        const { rows } = await other.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where state = 'active' and query like $1`, [`%${marker}%`]);
        return rows[0].n;
      });
    }

    it('asks the server to cancel a cut query, which would otherwise go on running there', async function () {
      const client = await connect();
      const marker = `cancelled_${Date.now()}`;
      await withDeadline(300, () => rejection(client.query(`select pg_sleep(30) as ${marker}`)));
      await eventually(async () => ((await running(marker)) === 0 ? true : undefined), 10_000, 'the cut query to stop on the server');
    });

    it('refuses a query asked for after the deadline without sending it, and keeps an idle connection', async function () {
      const client = await connect();
      const marker = `deadline-${Date.now()}`;
      const cut = await withDeadline(1, async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return rejection(client.query(`select '${marker}'`));
      });
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      const seen = await withClient(postgres.adminUrl, (other) => other.query(`select count(*)::int as n from pg_stat_activity where query like $1`, [`%'${marker}'%`]));
      expect(seen.rows[0].n).to.equal(0);
      // Nothing was sent and no transaction is open: the connection is as healthy as before.
      expect((await client.query('select 1 as one')).rows[0].one).to.equal(1);
    });

    it('ends a connection whose transaction is open when a query of it comes after the deadline', async function () {
      const client = await connect();
      await client.query('begin');
      const cut = await withDeadline(1, async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return rejection(client.query('select 1'));
      });
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      expect(await rejection(client.query('select 1'))).to.be.instanceOf(Error);
    });

    it('answers a rollback after the deadline without sending it, and ends the connection of the open transaction', async function () {
      const client = await connect();
      await client.query('begin');
      await client.query('create temporary table rolled_back (id int)');
      const pid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      const rolledBack = await withDeadline(1, async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return client.query('ROLLBACK');
      });
      expect(rolledBack.command).to.equal('ROLLBACK');
      // The connection went, and its backend with it: PostgreSQL rolled the transaction back.
      await eventually(async () => {
        const left = await withClient(postgres.adminUrl, (other) => other.query('select 1 from pg_stat_activity where pid = $1', [pid]));
        return left.rowCount === 0 ? true : undefined;
      });
      expect(await rejection(client.query('select 1'))).to.be.instanceOf(Error);
    });

    it('answers a rollback on a connection its deadline cut, so the caller can give it back; a rollback in time is sent', async function () {
      const client = await connect();
      await client.query('begin');
      const cut = await withDeadline(100, () => rejection(client.query('select pg_sleep(5)')));
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      const rolledBack = await client.query({ text: 'rollback' });
      expect(rolledBack.command).to.equal('ROLLBACK');
      const other = await connect();
      await other.query('begin');
      await withDeadline(5_000, () => other.query('rollback'));
      expect(other.getTransactionStatus()).to.equal('I');
    });

    it('leaves queries outside any deadline, and those that finish in time, as they are', async function () {
      const client = await connect();
      expect((await client.query('select pg_sleep(0.3), 1 as one')).rows[0].one).to.equal(1);
      expect((await withDeadline(5_000, () => client.query('select 2 as two'))).rows[0].two).to.equal(2);
      // Still the same healthy connection.
      expect((await client.query('select 3 as three')).rows[0].three).to.equal(3);
    });

    describe('honourDeadlines (a pg.Pool)', function () {
      const pools: pg.Pool[] = [];

      function pool(): pg.Pool {
        const created = new pg.Pool({ connectionString: postgres.adminUrl, max: 1 });
        created.on('error', () => {});
        created.on('connect', (client) => client.on('error', () => {}));
        pools.push(honourDeadlines(created, 'a test connection'));
        return created;
      }

      after(async function () {
        for (const created of pools) await created.end().catch(() => {});
      });

      it('hands a request waiting behind a cut query a working connection, never the cut one', async function () {
        const connections = pool();
        const cutRequest = withDeadline(300, async () => {
          const client = await connections.connect();
          try {
            return await client.query('select pg_sleep(30)');
          } finally {
            // Released in the same promise chain as the cut, as the ORM's driver does.
            client.release();
          }
        });
        const waiting = connections.connect();
        expect(await rejection(cutRequest)).to.be.instanceOf(DeadlineExceededError);
        const next = await waiting;
        try {
          expect((await next.query('select 1 as one')).rows[0].one).to.equal(1);
        } finally {
          next.release();
        }
      });

      it('cuts pool.query (the callback form underneath) and its checkout, and leaves the pool usable', async function () {
        const connections = pool();
        const marker = `pool_query_${Date.now()}`;
        const started = performance.now();
        const cut = await withDeadline(300, () => rejection(connections.query(`select pg_sleep(30) as ${marker}`)));
        expect(cut).to.be.instanceOf(DeadlineExceededError);
        expect(performance.now() - started).to.be.within(250, 5_000);
        await eventually(async () => ((await running(marker)) === 0 ? true : undefined), 10_000, 'the cut query to stop on the server');
        // A checkout behind a held connection gives up at the deadline too.
        const held = await connections.connect();
        const waited = await withDeadline(200, () => rejection(connections.query('select 1')));
        expect(waited).to.be.instanceOf(DeadlineExceededError);
        held.release();
        expect((await connections.query('select 2 as two')).rows[0].two).to.equal(2);
        expect((await withDeadline(5_000, () => connections.query('select 3 as three'))).rows[0].three).to.equal(3);
      });
    });
  });
});
