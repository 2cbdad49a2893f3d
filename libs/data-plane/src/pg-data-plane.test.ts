import { expect } from 'chai';
import { serviceUrl } from './service-role.js';
import { NotFoundError } from '@platform/domain';
import { dropScratchDatabase, eventually, rejection } from '@platform/testing';
import { readyDatabase, startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

describe('PgDataPlane', function () {
  let plane: ScratchDataPlane;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  after(async function () {
    await plane?.close();
  });

  it('opens each platform database on a pool of its own: what one holds, another does not', async function () {
    const one = await plane.newDatabase('one');
    const two = await plane.newDatabase('two');
    const tenant = await one.repos.tenants.create({ name: 'only in one' });
    expect(await one.repos.tenants.list()).to.deep.equal([tenant]);
    expect(await two.repos.tenants.list()).to.deep.equal([]);
    expect(await plane.dataPlane.open(one.record).tenants.find(tenant.id)).to.deep.equal(tenant);
    expect(plane.pools.size).to.equal(2);
  });

  it('answers for a database that does not exist with NotFoundError database_not_found', async function () {
    const error = await rejection(plane.dataPlane.open(readyDatabase('never_created')).tenants.list());
    expect(error).to.be.instanceOf(NotFoundError);
    expect(error).to.include({ kind: 'not_found', code: 'database_not_found', message: 'Database not found' });
  });

  it('answers the same once the database is dropped under a pool that was using it', async function () {
    const database = await plane.newDatabase('dropped');
    await database.repos.tenants.create({ name: 'before the drop' });
    const pool = plane.pools.pool(serviceUrl(plane.server.adminUrl, database.name));
    expect(pool.idleCount).to.equal(1);

    await dropScratchDatabase(plane.server, database.name);
    // The drop ended the pool's connection; the pool forgets it when it hears so.
    await eventually(async () => (pool.totalCount === 0 ? true : undefined), 5_000, 'the ended connection to leave the pool');
    for (const attempt of [() => database.repos.tenants.list(), () => database.repos.users.find(database.record.id), () => database.repos.sessions.findByToken('t')]) {
      const error = await rejection(attempt());
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.include({ code: 'database_not_found', message: 'Database not found' });
    }
  });
});
