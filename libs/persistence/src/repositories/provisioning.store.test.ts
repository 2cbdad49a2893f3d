import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { CopyImpossibleError, type Database, type ProvisioningTask, type Workspace } from '@platform/domain';
import { openRepositories } from '../request-scope.js';
import { deferred, eventually, FakeClock, query, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { MikroProvisioningStore } from './provisioning.store.js';

interface Row {
  status: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date | null;
  deleted: Date | null;
  closed: Date | null;
  dropped: Date | null;
}

/** A work callback that records the tasks it is given. */
function recorder() {
  const tasks: ProvisioningTask[] = [];
  return { tasks, work: async (task: ProvisioningTask) => void tasks.push(task) };
}

describe('MikroProvisioningStore', function () {
  let server: TestPostgres;
  let cp: ScratchControlPlane;
  let clock: FakeClock;
  let store: MikroProvisioningStore;
  let workspace: Workspace;

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createScratchControlPlane(server);
    clock = new FakeClock();
    store = new MikroProvisioningStore(cp.orm, clock);
    const repos = openRepositories(cp.orm);
    const owner = await repos.developers.ensure({ email: 'owner@example.test', name: null });
    workspace = await repos.workspaces.create({ name: 'Provisioning', slug: `prov-${randomBytes(4).toString('hex')}`, ownerId: owner.id });
  });

  afterEach(async function () {
    await cp?.close();
  });

  after(async function () {
    await server?.stop();
  });

  /** Marks the database deleted at the clock's time, restorable for `retentionMs` (0: due to be dropped at once). */
  function markDeleted(database: Database, retentionMs = 0) {
    const deleted = clock.now();
    return openRepositories(cp.orm).databases.markDeleted(database, { deleted, purgeAfter: new Date(deleted.getTime() + retentionMs) });
  }

  function newDatabase(name = `db_${randomBytes(4).toString('hex')}`): Promise<Database> {
    return openRepositories(cp.orm).databases.create({ id: randomUUID(), workspace, name, region: 'AWS_US_WEST_2' });
  }

  async function row(id: string): Promise<Row> {
    const [found] = await query<Row>(
      cp.url,
      'select status, attempts, last_error, next_attempt_at, deleted, closed, dropped from databases where id = $1',
      [id],
    );
    return found;
  }

  function fail(message: string) {
    return async () => {
      throw new Error(message);
    };
  }

  it('returns false without calling work when nothing needs work', async function () {
    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(false);

    const ready = await newDatabase();
    await query(cp.url, `update databases set status = 'READY' where id = $1`, [ready.id]);
    const pending = await newDatabase();
    await query(cp.url, `update databases set status = 'PENDING' where id = $1`, [pending.id]);
    const dropped = await newDatabase();
    await query(cp.url, 'update databases set deleted = now(), purge_after = now(), dropped = now() where id = $1', [dropped.id]);

    expect(await store.claim(work)).to.equal(false);
    expect(await store.claim(work, { databaseId: ready.id })).to.equal(false);
    expect(await store.claim(work, { databaseId: dropped.id })).to.equal(false);
    expect(await store.claim(work, { databaseId: randomUUID() })).to.equal(false);
    expect(tasks).to.deep.equal([]);
  });

  it('advances a REQUESTED database to BUILT and then to READY', async function () {
    const database = await newDatabase();
    const { tasks, work } = recorder();

    expect(await store.claim(work)).to.equal(true);
    expect(tasks).to.have.length(1);
    expect(tasks[0]).to.deep.include({ kind: 'advance', to: 'BUILT' });
    expect(tasks[0].database).to.deep.include({ id: database.id, status: 'REQUESTED', physicalName: database.physicalName, deleted: null });
    expect(tasks[0].database.workspace).to.deep.equal(workspace);
    expect((await row(database.id)).status).to.equal('BUILT');
    const [built] = await query<{ served_since: Date }>(cp.url, 'select served_since from databases where id = $1', [database.id]);
    expect(built.served_since, 'its cluster holds it from when it is built').to.deep.equal(clock.now());

    expect(await store.claim(work)).to.equal(true);
    expect(tasks[1]).to.deep.include({ kind: 'advance', to: 'READY' });
    expect(tasks[1].database.status).to.equal('BUILT');
    expect(await row(database.id)).to.deep.include({ status: 'READY', attempts: 0, last_error: null, next_attempt_at: null });

    expect(await store.claim(work)).to.equal(false);
    expect(tasks).to.have.length(2);
  });

  it('gives concurrent claims different databases (FOR UPDATE SKIP LOCKED), then persists both', async function () {
    const first = await newDatabase('first');
    const second = await newDatabase('second');
    const release = deferred();
    const held: ProvisioningTask[] = [];
    const work = async (task: ProvisioningTask) => {
      held.push(task);
      await release.promise;
    };

    const claims = [store.claim(work), store.claim(work)];
    try {
      await eventually(async () => (held.length === 2 ? true : undefined), 10_000, 'both claims to hold a database');
      expect(held.map((task) => task.database.id)).to.have.members([first.id, second.id]);

      // With both rows held, a third claim finds nothing claimable instead of waiting.
      const { tasks, work: third } = recorder();
      expect(await store.claim(third)).to.equal(false);
      expect(tasks).to.deep.equal([]);

      // Nothing is written while the work is still running.
      expect((await row(first.id)).status).to.equal('REQUESTED');
      expect((await row(second.id)).status).to.equal('REQUESTED');
    } finally {
      release.resolve();
    }
    expect(await Promise.all(claims)).to.deep.equal([true, true]);
    expect(held).to.have.length(2);
    expect((await row(first.id)).status).to.equal('BUILT');
    expect((await row(second.id)).status).to.equal('BUILT');
  });

  it('when work throws: rethrows, keeps the status, counts the attempt and schedules a retry', async function () {
    const database = await newDatabase();
    const error = await rejection(store.claim(fail('cluster unreachable')));
    expect(error).to.be.instanceOf(Error).with.property('message', 'cluster unreachable');

    const after = await row(database.id);
    expect(after).to.deep.include({ status: 'REQUESTED', attempts: 1, last_error: 'cluster unreachable', dropped: null });
    expect(after.next_attempt_at).to.be.instanceOf(Date);
    expect(after.next_attempt_at!.getTime()).to.be.greaterThan(clock.now().getTime());
    expect(after.next_attempt_at!.getTime()).to.equal(clock.now().getTime() + 1_000);
  });

  it('skips a failed database until its retry time, then claims it and clears the failure', async function () {
    const database = await newDatabase();
    await rejection(store.claim(fail('first failure')));
    const { tasks, work } = recorder();

    expect(await store.claim(work)).to.equal(false);
    clock.advance(999);
    expect(await store.claim(work)).to.equal(false);
    expect(tasks).to.deep.equal([]);

    clock.advance(1);
    expect(await store.claim(work)).to.equal(true);
    expect(tasks.map((task) => task.database.id)).to.deep.equal([database.id]);
    expect(await row(database.id)).to.deep.include({ status: 'BUILT', attempts: 0, last_error: null, next_attempt_at: null });
  });

  it('backs off exponentially and at most a minute', async function () {
    const database = await newDatabase();
    await rejection(store.claim(fail('one')));
    clock.advance(1_000);
    await rejection(store.claim(fail('two')));
    let after = await row(database.id);
    expect(after).to.deep.include({ attempts: 2, last_error: 'two' });
    expect(after.next_attempt_at!.getTime()).to.equal(clock.now().getTime() + 2_000);

    await query(cp.url, 'update databases set attempts = 12 where id = $1', [database.id]);
    clock.advance(2_000);
    await rejection(store.claim(fail('many')));
    after = await row(database.id);
    expect(after.attempts).to.equal(13);
    expect(after.next_attempt_at!.getTime()).to.equal(clock.now().getTime() + 60_000);

    // Hours of failures: the doubling must not overflow, or the failure would go unrecorded.
    await query(cp.url, 'update databases set attempts = 40 where id = $1', [database.id]);
    clock.advance(60_000);
    await rejection(store.claim(fail('hours')));
    after = await row(database.id);
    expect(after).to.deep.include({ attempts: 41, last_error: 'hours' });
    expect(after.next_attempt_at!.getTime()).to.equal(clock.now().getTime() + 60_000);
  });

  it('a failing database does not block the others', async function () {
    const failing = await newDatabase('failing');
    const healthy = await newDatabase('healthy');
    await query(cp.url, `update databases set created = now() - interval '1 hour' where id = $1`, [failing.id]);

    const error = await rejection(store.claim(fail('broken')));
    expect((error as Error).message).to.equal('broken');
    expect((await row(failing.id)).attempts).to.equal(1);

    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(true);
    expect(tasks.map((task) => task.database.id)).to.deep.equal([healthy.id]);
    expect((await row(failing.id)).status).to.equal('REQUESTED');
  });

  it('records a copy that no attempt can make as its failure, and never claims it again; other failures are retried', async function () {
    const source = await newDatabase('source');
    const copy = await openRepositories(cp.orm).databases.create({ id: randomUUID(), workspace, name: 'copy', region: 'AWS_US_WEST_2', source: { databaseId: source.id, at: clock.now() } });
    await query(cp.url, `update databases set status = 'READY' where id = $1`, [source.id]);
    await rejection(store.claim(fail('transient'), { databaseId: copy.id }));
    expect(await row(copy.id)).to.deep.include({ status: 'REQUESTED', attempts: 1, last_error: 'transient' });

    const impossible = async () => {
      throw new CopyImpossibleError('out of reach');
    };
    expect(await store.claim(impossible, { databaseId: copy.id })).to.equal(true);
    expect(await row(copy.id)).to.deep.include({ status: 'REQUESTED', attempts: 0, last_error: 'out of reach', next_attempt_at: null });
    const [failed] = await query<{ failure: string | null }>(cp.url, 'select failure from databases where id = $1', [copy.id]);
    expect(failed.failure).to.equal('out of reach');
    const found = await openRepositories(cp.orm).databases.findLiveById(workspace, copy.id);
    expect(found).to.deep.include({ failure: 'out of reach', status: 'REQUESTED' });

    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(false);
    expect(await store.claim(work, { databaseId: copy.id })).to.equal(false);
    // Deleted, it is closed and dropped like any other.
    await markDeleted(found!);
    expect(await store.claim(work)).to.equal(true);
    expect(tasks.map((task) => task.kind)).to.deep.equal(['drop']);
  });

  it('a claim with a databaseId takes that database and ignores its backoff', async function () {
    const older = await newDatabase('older');
    const target = await newDatabase('target');
    await query(cp.url, `update databases set created = now() - interval '1 hour' where id = $1`, [older.id]);
    await rejection(store.claim(fail('boom'), { databaseId: target.id }));
    expect((await row(target.id)).attempts).to.equal(1);
    expect((await row(older.id)).attempts).to.equal(0);

    const { tasks, work } = recorder();
    expect(await store.claim(work, { databaseId: target.id })).to.equal(true);
    expect(tasks.map((task) => task.database.id)).to.deep.equal([target.id]);
    expect(await row(target.id)).to.deep.include({ status: 'BUILT', attempts: 0, last_error: null, next_attempt_at: null });
    expect((await row(older.id)).status).to.equal('REQUESTED');
  });

  it('closes a deleted database, then drops it once its retention has ended, recording both', async function () {
    const database = await newDatabase();
    const { tasks, work } = recorder();
    await store.claim(work);
    await markDeleted(database, 60_000);
    clock.advance(5_000);

    expect(await store.claim(work)).to.equal(true);
    expect(tasks[1].kind).to.equal('close');
    expect(tasks[1].database.id).to.equal(database.id);
    expect(tasks[1].database.deleted).to.be.instanceOf(Date);
    expect(await row(database.id)).to.deep.include({ closed: clock.now(), dropped: null, status: 'BUILT' });
    // Nothing more until the retention ends, whoever asks.
    expect(await store.claim(work)).to.equal(false);
    expect(await store.claim(work, { databaseId: database.id })).to.equal(false);
    expect(tasks).to.have.length(2);

    clock.advance(55_000);
    expect(await store.claim(work)).to.equal(true);
    expect(tasks[2].kind).to.equal('drop');
    const after = await row(database.id);
    expect(after.dropped?.getTime()).to.equal(clock.now().getTime());
    expect(after.status).to.equal('BUILT');

    expect(await store.claim(work)).to.equal(false);
    expect(await store.claim(work, { databaseId: database.id })).to.equal(false);
    expect(tasks).to.have.length(3);
  });

  it('drops a deleted database whose retention ended before it was closed, without closing it first', async function () {
    const database = await newDatabase();
    await markDeleted(database);
    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(true);
    expect(tasks.map((task) => task.kind)).to.deep.equal(['drop']);
    expect(await row(database.id)).to.deep.include({ closed: null });
    expect((await row(database.id)).dropped).to.be.instanceOf(Date);
  });

  it('reopens a database restored while closed before its provisioning goes on', async function () {
    const database = await newDatabase();
    await markDeleted(database, 60_000);
    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(true);
    expect(await openRepositories(cp.orm).databases.restore(workspace, database.id, { now: clock.now() })).to.deep.include({ id: database.id, deleted: null });

    expect(await store.claim(work, { databaseId: database.id })).to.equal(true);
    expect(await row(database.id)).to.deep.include({ closed: null, deleted: null, status: 'REQUESTED' });
    expect(await store.claim(work)).to.equal(true);
    expect(tasks.map((task) => task.kind)).to.deep.equal(['close', 'reopen', 'advance']);
    expect((await row(database.id)).status).to.equal('BUILT');
  });

  it('a claim by id waits for another worker holding that database, then finds it done', async function () {
    const database = await newDatabase();
    await markDeleted(database);
    const release = deferred();
    const held: ProvisioningTask[] = [];
    const loop = store.claim(async (task) => {
      held.push(task);
      await release.promise;
    });
    await eventually(async () => (held.length === 1 ? true : undefined), 10_000, 'the loop to hold the drop');
    const { tasks, work } = recorder();
    let byIdEnded = false;
    const byId = store.claim(work, { databaseId: database.id }).then((claimed) => ((byIdEnded = true), claimed));
    // Still waiting while the loop holds the row (a skipped lock would have answered false at once).
    await eventually(async () => ((await query(cp.url, `select 1 from pg_stat_activity where wait_event_type = 'Lock'`)).length > 0 ? true : undefined), 10_000, 'the claim by id to wait');
    expect(byIdEnded).to.equal(false);
    release.resolve();
    expect(await loop).to.equal(true);
    expect(await byId).to.equal(false);
    expect(tasks).to.deep.equal([]);
    expect((await row(database.id)).dropped).to.be.instanceOf(Date);
  });

  it('a failed drop stays pending, and dropping by id retries it at once', async function () {
    const database = await newDatabase();
    await markDeleted(database);
    await rejection(store.claim(fail('drop failed')));
    expect(await row(database.id)).to.deep.include({ dropped: null, attempts: 1, last_error: 'drop failed' });

    const { tasks, work } = recorder();
    expect(await store.claim(work)).to.equal(false);
    expect(await store.claim(work, { databaseId: database.id })).to.equal(true);
    expect(tasks.map((task) => task.kind)).to.deep.equal(['drop']);
    const after = await row(database.id);
    expect(after.dropped).to.be.instanceOf(Date);
    expect(after).to.deep.include({ attempts: 0, last_error: null, next_attempt_at: null });
  });
});
