import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock, type ComputeInstance, type ComputeType, type Database } from '@platform/domain';
import { startTestPostgres, type TestPostgres } from '@platform/testing';
import { openRepositories } from '../request-scope.js';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlComputeInstances, SqlComputeStore } from './compute.store.js';

const SMALL: ComputeType = { id: 'small', computeSize: 'small', memory: '1 GiB', hourlyCost: 0.05, memoryMiB: 1024, maxConnections: 50 };
/** Longer than the clocks' disagreement could hide: the step's own duration. */
const STEP_MS = 400;

describe('SqlComputeStore: updated moves with the status', function () {
  let server: TestPostgres;
  let cp: ScratchControlPlane;
  let instances: SqlComputeInstances;
  let store: SqlComputeStore;
  let database: Database;

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createScratchControlPlane(server);
    instances = new SqlComputeInstances(cp.orm);
    store = new SqlComputeStore(cp.orm, systemClock);
    const repos = openRepositories(cp.orm);
    const owner = await repos.developers.ensure({ email: 'owner@example.test', name: null });
    const workspace = await repos.workspaces.create({ name: 'Compute', slug: `compute-${randomBytes(4).toString('hex')}`, ownerId: owner.id });
    database = await repos.databases.create({ id: randomUUID(), workspace, name: `db_${randomBytes(4).toString('hex')}`, region: 'AWS_US_WEST_2' });
  });

  afterEach(async function () {
    await cp?.close();
  });

  after(async function () {
    await server?.stop();
  });

  async function current(instance: ComputeInstance): Promise<ComputeInstance> {
    const found = await instances.find(database.id, instance.id);
    if (!found) throw new Error('the instance is gone');
    return found;
  }

  it('dates a status a step sets when the step ends, not when its claim began', async function () {
    const created = await instances.create({ id: randomUUID(), databaseId: database.id, name: 'main', type: SMALL });
    let stepEnded = 0;
    const claimed = await store.claim(async () => {
      await sleep(STEP_MS);
      stepEnded = Date.now();
      return { status: 'PROVISIONING', server: { host: '127.0.0.1', port: 5999 }, health: { status: 'ok', reason: null } };
    });
    expect(claimed).to.equal(true);
    const provisioning = await current(created);
    expect(provisioning.status).to.equal('PROVISIONING');
    // Before the fix, `updated` was the claim's transaction start: a whole step earlier.
    expect(provisioning.updated.getTime()).to.be.at.least(stepEnded - STEP_MS / 4);
    expect(provisioning.health?.since.getTime()).to.equal(provisioning.updated.getTime());
  });

  it('moves updated when a READY instance’s health changes status, and only then', async function () {
    const created = await instances.create({ id: randomUUID(), databaseId: database.id, name: 'main', type: SMALL });
    await store.claim(async () => ({ status: 'READY', server: { host: '127.0.0.1', port: 5999 }, health: { status: 'ok', reason: null } }));
    const ready = await current(created);
    expect(ready.status).to.equal('READY');

    await sleep(20);
    await store.recordHealth(created.id, { status: 'ok', reason: null });
    expect((await current(created)).updated).to.deep.equal(ready.updated);

    await sleep(20);
    await store.recordHealth(created.id, { status: 'down', reason: 'PANIC: could not write to file: No space left on device' });
    const down = await current(created);
    expect(down.health?.status).to.equal('down');
    expect(down.updated.getTime()).to.be.greaterThan(ready.updated.getTime());
    expect(down.updated.getTime()).to.equal(down.health?.since.getTime());

    await sleep(20);
    await store.recordHealth(created.id, { status: 'down', reason: 'PANIC: still no space' });
    expect((await current(created)).updated).to.deep.equal(down.updated);
    await store.recordHealth(created.id, { status: 'ok', reason: 'PANIC: could not write to file: No space left on device' });
    expect((await current(created)).updated.getTime()).to.be.greaterThan(down.updated.getTime());
  });

  it('moves updated when a delete is asked, and not when it is asked again', async function () {
    const created = await instances.create({ id: randomUUID(), databaseId: database.id, name: 'main', type: SMALL });
    await sleep(20);
    const deleting = await instances.markDeleting(database.id, created.id);
    expect(deleting?.status).to.equal('DELETING');
    expect(deleting!.updated.getTime()).to.be.greaterThan(created.updated.getTime());
    await sleep(20);
    expect((await instances.markDeleting(database.id, created.id))?.updated).to.deep.equal(deleting!.updated);
  });
});
