import { expect } from 'chai';
import { DeadlineExceededError, withDeadline } from '@platform/deadline';
import { createScratchDatabase, dropScratchDatabase, startTestPostgres, type ScratchDatabase, type TestPostgres } from '@platform/testing';
import { openOrm, type MikroORM } from './orm.js';

describe('the control plane ORM under deadlines', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let database: ScratchDatabase;
  let orm: MikroORM;

  before(async function () {
    postgres = await startTestPostgres();
    database = await createScratchDatabase(postgres, 'orm');
    // One connection: a connection the pool never got back would leave nothing for the next query.
    orm = await openOrm({ databaseUrl: database.url, poolSize: 1, connectTimeoutMs: 3_000 });
  });

  after(async function () {
    await orm?.close();
    if (database) await dropScratchDatabase(postgres, database.name);
    await postgres?.stop();
  });

  it('gets back the connection of a transaction its deadline cut: the next query runs, and the ORM closes', async function () {
    for (let round = 0; round < 3; round++) {
      const failure = await withDeadline(200, () =>
        orm.em
          .fork()
          .transactional(async (tx) => {
            await tx.getConnection().execute('select pg_sleep(2)', [], 'all', tx.getTransactionContext());
          })
          .then(
            () => null,
            (error: unknown) => error,
          ),
      );
      expect(failure, `round ${round}`).to.be.instanceOf(DeadlineExceededError);
      const [row] = await orm.em.getConnection().execute<{ one: number }[]>('select 1 as one');
      expect(row.one).to.equal(1);
    }
  });
});
