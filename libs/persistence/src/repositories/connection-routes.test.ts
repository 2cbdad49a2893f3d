import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import type { ComputeType, Database } from '@platform/domain';
import { startTestPostgres, type TestPostgres } from '@platform/testing';
import { openRepositories } from '../request-scope.js';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlComputeInstances } from './compute.store.js';
import { ControlPlaneConnectionRoutes } from './connection-routes.js';

const LARGE: ComputeType = { id: 'ct_large', computeSize: 'large', memory: '4 GiB', hourlyCost: 0.24, memoryMiB: 4096, maxConnections: 400 };

/** The gateway's routes: what sizes a pooled login's pool comes with the route when the control plane has it. */
describe('ControlPlaneConnectionRoutes: connection limits', function () {
  let server: TestPostgres;
  let cp: ScratchControlPlane;
  let database: Database;
  /** A credential's role name (a fresh control plane for each test). */
  const credentialId = `cred_${'a'.repeat(20)}`;

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createScratchControlPlane(server);
    const repos = openRepositories(cp.orm);
    const owner = await repos.developers.ensure({ email: 'owner@example.test', name: null });
    const workspace = await repos.workspaces.create({ name: 'Routes', slug: `routes-${randomBytes(4).toString('hex')}`, ownerId: owner.id });
    database = await repos.databases.create({ id: randomUUID(), workspace, name: `db_${randomBytes(4).toString('hex')}`, region: 'AWS_US_WEST_2' });
    await repos.credentials.create({ id: credentialId, databaseId: database.id, tenantId: null, internal: false });
  });

  afterEach(async function () {
    await cp?.close();
  });

  after(async function () {
    await server?.stop();
  });

  it('carries none for a database on its region’s cluster (its catalog holds the limits)', async function () {
    const route = await new ControlPlaneConnectionRoutes(cp.orm).find(credentialId);
    expect(route).to.include({ credentialId, connectionLimit: null, cancelSlot: null });
    expect(route!.database.server).to.equal(null);
  });

  it('carries the compute type’s maxConnections for a database served on its instance', async function () {
    const instance = await new SqlComputeInstances(cp.orm).create({ id: randomUUID(), databaseId: database.id, name: 'main', type: LARGE });
    await cp.orm.em.getConnection().execute(`update databases set server_host = '127.0.0.1', server_port = 5999 where id = ?`, [database.id]);
    const route = await new ControlPlaneConnectionRoutes(cp.orm).find(credentialId);
    expect(route).to.include({ credentialId, connectionLimit: 400 });
    expect(route!.cancelSlot).to.be.a('number');
    expect(route!.database.server).to.deep.equal({ host: '127.0.0.1', port: 5999 });
    expect(instance.instanceType.maxConnections).to.equal(400);
  });
});
