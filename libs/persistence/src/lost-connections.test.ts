import { expect } from 'chai';
import { createScratchDatabase, dropScratchDatabase, query, startTestPostgres, type ScratchDatabase, type TestPostgres } from '@platform/testing';
import type { PostgreSqlConnection } from '@mikro-orm/postgresql';
import { closeOrm, openOrm, type MikroORM } from './orm.js';

/** How long the ORM may take to close once its connection was lost: a leaked client made it wait for ever. */
const CLOSE_WITHIN_MS = 3_000;

type Moment = 'between two queries' | 'during a query' | 'before the commit';

/** 'closed', or what is still going on after CLOSE_WITHIN_MS (a closing that never ends is left to itself). */
async function closeWithinBound(orm: MikroORM): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    orm.close().then(() => 'closed'),
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`still closing after ${CLOSE_WITHIN_MS} ms`), CLOSE_WITHIN_MS))),
  ]);
  clearTimeout(timer);
  return closed;
}

/**
 * Runs a transaction whose backend the cluster's superuser terminates at `moment`, and answers the
 * error the transaction failed with.
 */
async function transactionLosingItsBackend(orm: MikroORM, adminUrl: string, moment: Moment): Promise<unknown> {
  const terminate = (pid: number) => query(adminUrl, 'select pg_terminate_backend($1)', [pid]);
  return orm.em
    .fork()
    .transactional(async (tx) => {
      const connection = tx.getConnection();
      const ctx = tx.getTransactionContext();
      const [{ pid }] = await connection.execute<{ pid: number }[]>('select pg_backend_pid() as pid', [], 'all', ctx);
      if (moment === 'during a query') {
        // Settled at once (and rethrown below): its rejection arrives while the terminate is awaited.
        const running = connection.execute('select pg_sleep(10)', [], 'all', ctx).then(
          () => null,
          (error: unknown) => error,
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        await terminate(pid);
        const failure = await running;
        if (failure) throw failure;
        return;
      }
      await terminate(pid);
      // The client learns of it from its socket's end.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (moment === 'between two queries') await connection.execute('select 1', [], 'all', ctx);
    })
    .then(
      () => null,
      (error: unknown) => error,
    );
}

describe('the control plane ORM when a transaction’s connection is lost', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let database: ScratchDatabase;

  before(async function () {
    postgres = await startTestPostgres();
    database = await createScratchDatabase(postgres, 'lost');
  });

  after(async function () {
    if (database) await dropScratchDatabase(postgres, database.name);
    await postgres?.stop();
  });

  for (const moment of ['between two queries', 'during a query', 'before the commit'] as const) {
    it(`gets the connection back when its backend is terminated ${moment}: the next query runs, and the ORM closes at once`, async function () {
      // One connection: a client the pool never got back would leave nothing for the next query.
      const orm = await openOrm({ databaseUrl: database.url, poolSize: 1, connectTimeoutMs: 2_000 });
      let closed: string | undefined;
      try {
        const failure = await transactionLosingItsBackend(orm, postgres.adminUrl, moment);
        expect(failure, 'the transaction failed').to.be.instanceOf(Error);
        expect((failure as Error).message).to.match(moment === 'during a query' ? /terminating connection due to administrator command/ : /not queryable/);
        const [row] = await orm.em.getConnection().execute<{ one: number }[]>('select 1 as one');
        expect(row.one).to.equal(1);
        closed = await closeWithinBound(orm);
        expect(closed).to.equal('closed');
      } finally {
        // Bounded too: before the fix, a failing case would have hung here instead of failing.
        if (closed === undefined) await closeWithinBound(orm);
      }
    });
  }

  it('closes past a client that is never given back: its connection is ended after the grace, and the log names its last statement', async function () {
    const orm = await openOrm({ databaseUrl: database.url, poolSize: 2 });
    // Through the ORM first: Kysely ends the pool at close only once it has used it.
    await orm.em.getConnection().execute('select 1');
    const pool = await (orm.em.getConnection() as PostgreSqlConnection).getNativeClient();
    const held = await pool.connect();
    await held.query('select 42 as   held_here');
    held.on('error', () => {});
    const logged: { details: object; message: string }[] = [];
    const started = Date.now();
    await closeOrm(orm, { graceMs: 300, log: { error: (details, message) => void logged.push({ details, message }) } });
    expect(Date.now() - started).to.be.within(300, CLOSE_WITHIN_MS);
    expect(logged).to.have.length(1);
    expect(logged[0].message).to.equal('a control-plane connection was still checked out 300 ms into the close; ended');
    expect(logged[0].details).to.include({ lastStatement: 'select 42 as held_here' });
    expect((logged[0].details as { heldMs: number }).heldMs).to.be.at.least(300);
    // Its holder's own release comes too late and does nothing (the pool would throw on a second one).
    expect(() => held.release()).not.to.throw();
  });

  it('closes at once, logging nothing, when every client was given back', async function () {
    const orm = await openOrm({ databaseUrl: database.url, poolSize: 2 });
    await orm.em.getConnection().execute('select 1');
    const logged: object[] = [];
    const started = Date.now();
    await closeOrm(orm, { graceMs: 2_000, log: { error: (details) => void logged.push(details) } });
    expect(Date.now() - started).to.be.below(1_000);
    expect(logged).to.deep.equal([]);
  });
});
