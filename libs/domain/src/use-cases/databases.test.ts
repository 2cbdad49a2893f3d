import { expect } from 'chai';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { physicalDatabaseName, type Database, type DeveloperPrincipal, type Workspace } from '../model.js';
import type { Clock, ClusterDirectory, Provisioner, WorkspaceRepository } from '../ports.js';
import { REGIONS } from '../regions.js';
import { createDatabase, deleteDatabase, getDatabase, listDatabases, listDeletedDatabases, listRegions, purgeDatabase, renameDatabase, restoreDatabase } from './databases.js';
import { copyDatabase } from './database-copies.js';
import { rejection } from './assertions.test-support.js';
import { FakeClusters, FakeCopier, FixedWorkspaces, InMemoryDatabases, RecordingProvisioner } from './database-fakes.test-support.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const alice: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-alice', scopes: [] };
const bob: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-bob', scopes: [] };
const acme: Workspace = { id: 'ws-acme', name: 'Acme', slug: 'acme', billingCustomerId: null, created: new Date(0) };
const beta: Workspace = { id: 'ws-beta', name: 'Beta', slug: 'beta', billingCustomerId: null, created: new Date(0) };

describe('database use cases', () => {
  let log: string[];
  let databases: InMemoryDatabases;
  let deps: {
    workspaces: WorkspaceRepository;
    databases: InMemoryDatabases;
    clusters: ClusterDirectory;
    provisioner: Provisioner;
    clock: Clock;
    deleteRetentionSeconds: number;
  };
  /** The clock's time, which tests move. */
  let now: Date;

  beforeEach(() => {
    log = [];
    databases = new InMemoryDatabases(log);
    deps = {
      workspaces: new FixedWorkspaces([
        { workspace: acme, members: ['dev-alice'] },
        { workspace: beta, members: ['dev-bob'] },
      ]),
      databases,
      clusters: new FakeClusters(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1']),
      provisioner: new RecordingProvisioner(log),
      clock: { now: () => now },
      deleteRetentionSeconds: 3600,
    };
    now = new Date('2026-01-02T00:00:00Z');
  });

  describe('copyDatabase', () => {
    let copier: FakeCopier;
    let source: Database;
    const copy = (caller: DeveloperPrincipal, slug: string, from: { database: string; at?: Date }, name = 'copy') =>
      copyDatabase({ ...deps, copier }, caller, slug, { name, from });

    beforeEach(async () => {
      copier = new FakeCopier();
      source = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_EU_CENTRAL_1' });
      source.status = 'READY';
      log.length = 0;
    });

    it('records the source and the instant, in the source’s region by default, then nudges the provisioner', async () => {
      const at = new Date('2026-01-01T18:00:00Z');
      const restored = await copy(alice, 'acme', { database: 'orders', at });
      expect(restored).to.deep.include({ name: 'copy', status: 'REQUESTED', region: 'AWS_EU_CENTRAL_1', source: { databaseId: source.id, at } });
      expect(log).to.deep.equal(['create:copy', 'nudge']);
    });

    it('makes a branch as of now without `at`, and finds the source by id too', async () => {
      const branch = await copy(alice, 'acme', { database: source.id });
      expect(branch.source).to.deep.equal({ databaseId: source.id, at: now });
    });

    it('refuses an instant before the backups reach, or in the future, with the window', async () => {
      const early = await rejection(copy(alice, 'acme', { database: 'orders', at: new Date('2026-01-01T11:59:59Z') }));
      expect(early).to.be.instanceOf(ValidationError).and.include({ code: 'restore_point_outside_window' });
      expect((early as Error).message).to.include('from 2026-01-01T12:00:00.000Z to now (2026-01-02T00:00:00.000Z)');
      const future = await rejection(copy(alice, 'acme', { database: 'orders', at: new Date('2026-01-02T00:00:01Z') }));
      expect(future).to.be.instanceOf(ValidationError).and.include({ code: 'restore_point_outside_window' });
      copier.from = null;
      const none = await rejection(copy(alice, 'acme', { database: 'orders' }));
      expect((none as Error).message).to.include('no instant yet');
      expect(log).to.deep.equal([]);
    });

    it('refuses a source whose server is not backed up here with 409 backups_not_configured, naming a dedicated compute instance as such', async () => {
      copier.configured = false;
      const cluster = await rejection(copy(alice, 'acme', { database: 'orders' }));
      expect(cluster).to.be.instanceOf(ConflictError).and.include({ code: 'backups_not_configured' });
      expect((cluster as Error).message).to.include('The backups of the cluster that serves');
      source.server = { host: '127.0.0.1', port: 5999 };
      const instance = await rejection(copy(alice, 'acme', { database: 'orders' }));
      expect((instance as Error).message).to.include('The backups of the dedicated compute instance that serves');
      copier.configured = true;
      expect((await copy(alice, 'acme', { database: 'orders' })).source, 'a source on its dedicated compute is copied from its server’s backups').to.deep.equal({ databaseId: source.id, at: now });
    });

    it('reaches no further back than since its server has held the source, and refuses a source that is moving', async () => {
      source.servedSince = new Date('2026-01-01T20:00:00Z');
      const before = await rejection(copy(alice, 'acme', { database: 'orders', at: new Date('2026-01-01T19:59:59Z') }));
      expect(before).to.be.instanceOf(ValidationError).and.include({ code: 'restore_point_outside_window' });
      expect((before as Error).message).to.include('from 2026-01-01T20:00:00.000Z to now');
      const at = new Date('2026-01-01T20:00:00Z');
      expect((await copy(alice, 'acme', { database: 'orders', at })).source).to.deep.equal({ databaseId: source.id, at });
      source.servedSince = new Date('2026-01-01T06:00:00Z');
      expect((await rejection(copy(alice, 'acme', { database: 'orders', at: new Date('2026-01-01T11:00:00Z') }, 'older'))) as Error).to.include({ code: 'restore_point_outside_window' });
      source.moving = true;
      const moving = await rejection(copy(alice, 'acme', { database: 'orders' }, 'other'));
      expect(moving).to.be.instanceOf(ConflictError).and.include({ code: 'database_not_ready' });
      expect((moving as Error).message).to.include('is moving between servers');
    });

    it('refuses a source that is not READY, and one of another workspace as not found', async () => {
      source.status = 'BUILT';
      expect(await rejection(copy(alice, 'acme', { database: 'orders' }))).to.be.instanceOf(ConflictError).and.include({ code: 'database_not_ready' });
      await createDatabase(deps, bob, 'beta', { name: 'theirs', region: 'AWS_US_WEST_2' });
      expect(await rejection(copy(alice, 'acme', { database: 'theirs' }))).to.be.instanceOf(NotFoundError).and.include({ code: 'database_not_found' });
      expect(await rejection(copy(bob, 'beta', { database: source.id }))).to.be.instanceOf(NotFoundError).and.include({ code: 'database_not_found' });
    });
  });

  describe('createDatabase', () => {
    it('persists the database in REQUESTED and then nudges the provisioner', async () => {
      const database = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      expect(database.name).to.equal('orders');
      expect(database.region).to.equal('AWS_US_WEST_2');
      expect(database.status).to.equal('REQUESTED');
      expect(database.workspace).to.equal(acme);
      expect(database.id).to.match(UUID);
      expect(database.physicalName).to.equal(physicalDatabaseName(database.id));
      expect(log).to.deep.equal(['create:orders', 'nudge']);
    });

    it('gives each database its own id', async () => {
      const a = await createDatabase(deps, alice, 'acme', { name: 'a', region: 'AWS_US_WEST_2' });
      const b = await createDatabase(deps, alice, 'acme', { name: 'b', region: 'AWS_US_WEST_2' });
      expect(a.id).not.to.equal(b.id);
    });

    it('refuses a region the platform does not serve, naming the served ones', async () => {
      const error = await rejection(createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AZURE_EASTUS' }));
      expect(error).to.be.instanceOf(ValidationError);
      expect(error).to.have.property('code', 'region_not_served');
      expect((error as Error).message).to.contain('AZURE_EASTUS').and.to.contain('AWS_US_WEST_2').and.to.contain('AWS_EU_CENTRAL_1');
      expect(log).to.deep.equal([]);
    });

    it('refuses an invalid name before anything else', async () => {
      const error = await rejection(createDatabase(deps, alice, 'acme', { name: 'my-db', region: 'AWS_US_WEST_2' }));
      expect(error).to.be.instanceOf(ValidationError);
      expect(error).to.have.property('code', 'invalid_database_name');
      expect(log).to.deep.equal([]);
    });

    it("answers workspace_not_found for a workspace the caller does not belong to", async () => {
      const error = await rejection(createDatabase(deps, bob, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' }));
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.have.property('code', 'workspace_not_found');
      expect(log).to.deep.equal([]);
    });

    it('propagates a name conflict and does not nudge', async () => {
      await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      log.length = 0;
      const error = await rejection(createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_EU_CENTRAL_1' }));
      expect(error).to.be.instanceOf(ConflictError);
      expect(log).to.deep.equal(['create:orders']);
    });
  });

  describe('listDatabases and getDatabase', () => {
    it("lists the live databases of the caller's workspace only", async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      const gone = await createDatabase(deps, alice, 'acme', { name: 'gone', region: 'AWS_US_WEST_2' });
      await createDatabase(deps, bob, 'beta', { name: 'other', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'gone');
      const listed = (await listDatabases(deps, alice, 'acme')).items;
      expect(listed.map((d) => d.id)).to.deep.equal([orders.id]);
      expect(listed.map((d) => d.id)).not.to.include(gone.id);
    });

    it('refuses to list a workspace of someone else', async () => {
      const error = await rejection(listDatabases(deps, alice, 'beta'));
      expect(error).to.have.property('code', 'workspace_not_found');
    });

    it('gets a database by name and answers database_not_found otherwise', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      expect(await getDatabase(deps, alice, 'acme', 'orders')).to.equal(orders);
      const error = await rejection(getDatabase(deps, alice, 'acme', 'missing'));
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.have.property('code', 'database_not_found');
    });

    it("does not find another workspace's database by name", async () => {
      await createDatabase(deps, bob, 'beta', { name: 'orders', region: 'AWS_US_WEST_2' });
      const error = await rejection(getDatabase(deps, alice, 'acme', 'orders'));
      expect(error).to.have.property('code', 'database_not_found');
    });
  });

  describe('renameDatabase', () => {
    it('renames and returns the previous id and name', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      const { database, previous } = await renameDatabase(deps, alice, 'acme', 'orders', 'sales');
      expect(previous).to.deep.equal({ id: orders.id, name: 'orders' });
      expect(database.name).to.equal('sales');
      expect(database.id).to.equal(orders.id);
      expect(database.physicalName).to.equal(orders.physicalName);
      expect(log).to.include(`rename:${orders.id}:sales`);
      expect((await getDatabase(deps, alice, 'acme', 'sales')).id).to.equal(orders.id);
    });

    it('is a no-op when the name is unchanged', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      log.length = 0;
      const { database, previous } = await renameDatabase(deps, alice, 'acme', 'orders', 'orders');
      expect(database).to.equal(orders);
      expect(previous).to.deep.equal({ id: orders.id, name: 'orders' });
      expect(log).to.deep.equal([]);
    });

    it('refuses an invalid new name without renaming', async () => {
      await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      log.length = 0;
      const error = await rejection(renameDatabase(deps, alice, 'acme', 'orders', '1sales'));
      expect(error).to.have.property('code', 'invalid_database_name');
      expect(log).to.deep.equal([]);
    });

    it('answers database_not_found for a missing database', async () => {
      const error = await rejection(renameDatabase(deps, alice, 'acme', 'missing', 'sales'));
      expect(error).to.have.property('code', 'database_not_found');
    });

    it('propagates a conflict with another live database', async () => {
      await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await createDatabase(deps, alice, 'acme', { name: 'sales', region: 'AWS_US_WEST_2' });
      const error = await rejection(renameDatabase(deps, alice, 'acme', 'orders', 'sales'));
      expect(error).to.be.instanceOf(ConflictError);
    });
  });

  describe('deleteDatabase', () => {
    it('marks the database deleted until the retention ends, then settles it (closes its PostgreSQL database)', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      log.length = 0;
      const deleted = await deleteDatabase(deps, alice, 'acme', 'orders');
      expect(deleted).to.include({ id: orders.id, name: 'orders' });
      expect(deleted.deleted).to.deep.equal(now);
      expect(log).to.deep.equal([`markDeleted:${orders.id}`, `settleNow:${orders.id}`]);
      const error = await rejection(getDatabase(deps, alice, 'acme', 'orders'));
      expect(error).to.have.property('code', 'database_not_found');
    });

    it('frees the name for a new database', async () => {
      const first = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'orders');
      const second = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      expect(second.id).not.to.equal(first.id);
    });

    it('does nothing for a missing database or a foreign workspace', async () => {
      await createDatabase(deps, bob, 'beta', { name: 'orders', region: 'AWS_US_WEST_2' });
      log.length = 0;
      expect(await rejection(deleteDatabase(deps, alice, 'acme', 'orders'))).to.have.property('code', 'database_not_found');
      expect(await rejection(deleteDatabase(deps, alice, 'beta', 'orders'))).to.have.property('code', 'workspace_not_found');
      expect(log).to.deep.equal([]);
    });
  });

  describe('listDeletedDatabases', () => {
    it('lists the deleted databases of the workspace still within their retention', async () => {
      const kept = await createDatabase(deps, alice, 'acme', { name: 'kept', region: 'AWS_US_WEST_2' });
      await createDatabase(deps, alice, 'acme', { name: 'live', region: 'AWS_US_WEST_2' });
      await createDatabase(deps, bob, 'beta', { name: 'theirs', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'kept');
      await deleteDatabase(deps, bob, 'beta', 'theirs');
      expect((await listDeletedDatabases(deps, alice, 'acme')).items.map((d) => d.id)).to.deep.equal([kept.id]);
      now = new Date(now.getTime() + 3600 * 1000);
      expect((await listDeletedDatabases(deps, alice, 'acme')).items).to.deep.equal([]);
      expect(await rejection(listDeletedDatabases(deps, alice, 'beta'))).to.have.property('code', 'workspace_not_found');
    });
  });

  describe('restoreDatabase', () => {
    it('brings a deleted database back under its old name, then settles it (reopens its PostgreSQL database)', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'orders');
      log.length = 0;
      const restored = await restoreDatabase(deps, alice, 'acme', orders.id);
      expect(restored).to.include({ id: orders.id, name: 'orders', deleted: null });
      expect(log).to.deep.equal([`restore:${orders.id}`, `settleNow:${orders.id}`]);
      expect((await getDatabase(deps, alice, 'acme', 'orders')).id).to.equal(orders.id);
    });

    it('restores under a new name when the old one is taken, and answers database_name_taken otherwise', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'orders');
      await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      const taken = await rejection(restoreDatabase(deps, alice, 'acme', orders.id));
      expect(taken).to.be.instanceOf(ConflictError);
      expect(taken).to.have.property('code', 'database_name_taken');
      expect((await restoreDatabase(deps, alice, 'acme', orders.id, { name: 'orders_old' })).name).to.equal('orders_old');
    });

    it('refuses an invalid new name before anything else', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'orders');
      log.length = 0;
      const error = await rejection(restoreDatabase(deps, alice, 'acme', orders.id, { name: 'not-valid' }));
      expect(error).to.be.instanceOf(ValidationError);
      expect(log).to.deep.equal([]);
    });

    it('answers database_not_found for a live, unknown, foreign, purged or expired database, and for a name', async () => {
      const live = await createDatabase(deps, alice, 'acme', { name: 'live', region: 'AWS_US_WEST_2' });
      const expired = await createDatabase(deps, alice, 'acme', { name: 'expired', region: 'AWS_US_WEST_2' });
      const purged = await createDatabase(deps, alice, 'acme', { name: 'purged', region: 'AWS_US_WEST_2' });
      const theirs = await createDatabase(deps, bob, 'beta', { name: 'theirs', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'expired');
      await deleteDatabase(deps, bob, 'beta', 'theirs');
      now = new Date(now.getTime() + 3600 * 1000);
      await deleteDatabase(deps, alice, 'acme', 'purged');
      await purgeDatabase(deps, alice, 'acme', purged.id);
      for (const id of [live.id, expired.id, purged.id, theirs.id, '00000000-0000-4000-8000-000000000000', 'live']) {
        const error = await rejection(restoreDatabase(deps, alice, 'acme', id));
        expect(error, id).to.be.instanceOf(NotFoundError);
        expect(error, id).to.have.property('code', 'database_not_found');
      }
      expect(await rejection(restoreDatabase(deps, alice, 'beta', theirs.id))).to.have.property('code', 'workspace_not_found');
    });
  });

  describe('purgeDatabase', () => {
    it('ends the retention of a deleted database now, then settles it (drops it)', async () => {
      const orders = await createDatabase(deps, alice, 'acme', { name: 'orders', region: 'AWS_US_WEST_2' });
      await deleteDatabase(deps, alice, 'acme', 'orders');
      log.length = 0;
      expect((await purgeDatabase(deps, alice, 'acme', orders.id)).id).to.equal(orders.id);
      expect(log).to.deep.equal([`endRetention:${orders.id}`, `settleNow:${orders.id}`]);
      expect((await listDeletedDatabases(deps, alice, 'acme')).items).to.deep.equal([]);
      expect(await rejection(purgeDatabase(deps, alice, 'acme', orders.id))).to.have.property('code', 'database_not_found');
    });

    it('answers database_not_found for a live database and workspace_not_found for a foreign workspace', async () => {
      const live = await createDatabase(deps, alice, 'acme', { name: 'live', region: 'AWS_US_WEST_2' });
      expect(await rejection(purgeDatabase(deps, alice, 'acme', live.id))).to.have.property('code', 'database_not_found');
      expect(await rejection(purgeDatabase(deps, bob, 'acme', live.id))).to.have.property('code', 'workspace_not_found');
    });
  });

  describe('listRegions', () => {
    it('lists the served regions to a member', async () => {
      expect(await listRegions(deps, alice, 'acme')).to.deep.equal(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1']);
    });

    it('lists every region when all are served', async () => {
      deps.clusters = new FakeClusters(REGIONS);
      expect(await listRegions(deps, alice, 'acme')).to.deep.equal([...REGIONS]);
    });

    it('answers workspace_not_found to a non-member', async () => {
      const error = await rejection(listRegions(deps, alice, 'beta'));
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.have.property('code', 'workspace_not_found');
    });
  });
});
