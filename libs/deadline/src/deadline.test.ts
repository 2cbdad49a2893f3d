import { expect } from 'chai';
import pg from 'pg';
import { deferred, rejection, startTestPostgres, withClient, type TestPostgres } from '@platform/testing';
import { beforeDeadline, DEADLINE_EXCEEDED, DeadlineExceededError, remainingMs, withDeadline, withoutDeadline } from './deadline.js';
import { cutQueriesAtDeadline } from './query-deadline.js';

describe('deadlines', function () {
  describe('withDeadline', function () {
    it('carries the deadline through awaits, takes the sooner of nested ones, and withoutDeadline drops it', async function () {
      expect(remainingMs()).to.equal(undefined);
      await withDeadline(5_000, async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        expect(remainingMs()).to.be.within(4_000, 4_990);
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

    it('refuses a query asked for after the deadline without sending it, and destroys the connection', async function () {
      const client = await connect();
      const marker = `deadline-${Date.now()}`;
      const cut = await withDeadline(1, async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return rejection(client.query(`select '${marker}'`));
      });
      expect(cut).to.be.instanceOf(DeadlineExceededError);
      const seen = await withClient(postgres.adminUrl, (other) => other.query(`select count(*)::int as n from pg_stat_activity where query like $1`, [`%'${marker}'%`]));
      expect(seen.rows[0].n).to.equal(0);
      expect(await rejection(client.query('select 1'))).to.be.instanceOf(Error);
    });

    it('leaves queries outside any deadline, and those that finish in time, as they are', async function () {
      const client = await connect();
      expect((await client.query('select pg_sleep(0.3), 1 as one')).rows[0].one).to.equal(1);
      expect((await withDeadline(5_000, () => client.query('select 2 as two'))).rows[0].two).to.equal(2);
      // Still the same healthy connection.
      expect((await client.query('select 3 as three')).rows[0].three).to.equal(3);
    });
  });
});
