import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Database } from '@platform/domain';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { openRepositories } from '../request-scope.js';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';

describe('CredentialRepository', function () {
  let server: TestPostgres;
  let cp: ScratchControlPlane;
  let first: Database;
  let second: Database;

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createScratchControlPlane(server);
    const repos = openRepositories(cp.orm);
    const owner = await repos.developers.ensure({ email: 'owner@example.test', name: null });
    const workspace = await repos.workspaces.create({ name: 'Acme', slug: `ws-${randomBytes(4).toString('hex')}`, ownerId: owner.id });
    first = await repos.databases.create({ id: randomUUID(), workspace, name: 'first', region: 'AWS_US_WEST_2' });
    second = await repos.databases.create({ id: randomUUID(), workspace, name: 'second', region: 'AWS_US_WEST_2' });
  });

  afterEach(async function () {
    await cp?.close();
  });

  after(async function () {
    await server?.stop();
  });

  it('records a credential and finds it through its database only', async function () {
    const created = await openRepositories(cp.orm).credentials.create({ id: 'cred_a', databaseId: first.id, tenantId: null, internal: false });
    expect(created).to.deep.include({ id: 'cred_a', databaseId: first.id, tenantId: null, internal: false });
    expect(created.created).to.be.instanceOf(Date);
    const fresh = openRepositories(cp.orm).credentials;
    expect(await fresh.find(first.id, 'cred_a')).to.deep.equal(created);
    expect(await fresh.find(second.id, 'cred_a')).to.equal(null);
    expect(await fresh.find(first.id, 'cred_missing')).to.equal(null);
  });

  it('lists a database’s live credentials oldest first, by tenant and by internal', async function () {
    const tenantId = randomUUID();
    const repo = openRepositories(cp.orm).credentials;
    const open = await repo.create({ id: 'cred_open', databaseId: first.id, tenantId: null, internal: false });
    const scoped = await repo.create({ id: 'cred_scoped', databaseId: first.id, tenantId, internal: false });
    const internal = await repo.create({ id: 'cred_internal', databaseId: first.id, tenantId: null, internal: true });
    await repo.create({ id: 'cred_elsewhere', databaseId: second.id, tenantId, internal: false });
    const fresh = openRepositories(cp.orm).credentials;
    expect(await fresh.listForDatabase(first.id, { internal: false })).to.deep.equal([open, scoped]);
    expect(await fresh.listForDatabase(first.id, { internal: false, tenantId })).to.deep.equal([scoped]);
    expect(await fresh.listForDatabase(first.id, { internal: true })).to.deep.equal([internal]);
    expect(await fresh.listForDatabase(first.id, { internal: false, tenantId: randomUUID() })).to.deep.equal([]);
  });

  it('markDeleted hides the credential but keeps its row; another database’s id changes nothing', async function () {
    const repo = openRepositories(cp.orm).credentials;
    await repo.create({ id: 'cred_a', databaseId: first.id, tenantId: null, internal: false });
    await repo.markDeleted(second.id, 'cred_a');
    expect(await repo.find(first.id, 'cred_a')).not.to.equal(null);
    await repo.markDeleted(first.id, 'cred_a');
    expect(await repo.find(first.id, 'cred_a')).to.equal(null);
    expect(await repo.listForDatabase(first.id, { internal: false })).to.deep.equal([]);
    const rows = await query<{ id: string; deleted: Date | null }>(cp.url, 'select id, deleted from credentials');
    expect(rows.map((row) => [row.id, row.deleted instanceof Date])).to.deep.equal([['cred_a', true]]);
  });
});
