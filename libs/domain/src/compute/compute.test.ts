import { expect } from 'chai';
import { failure } from '../use-cases/assertions.test-support.js';
import { fakePlatform, NOW } from '../use-cases/fakes.test-support.js';
import { ConflictError } from '../errors.js';
import type { ComputeInstance, ComputeInstanceRepository, InstanceWindow } from './compute-instances.js';
import { assertCatalog, computeType, DEFAULT_COMPUTE_TYPES, resolveComputeType, serverSettings, type ComputeType } from './compute-types.js';
import { canExpand, createComputeInstance, deleteComputeInstance, listComputeInstances, listComputeTypes, updateComputeInstance } from './compute.js';

const MAIN = { workspaceSlug: 'acme', databaseName: 'main' };
const [SMALL, MEDIUM] = DEFAULT_COMPUTE_TYPES;

/** Instances in memory, with the store's rules: one live instance per database, changes only while live. */
class FakeInstances implements ComputeInstanceRepository {
  readonly rows: ComputeInstance[] = [];

  async create(input: { id: string; databaseId: string; name: string; type: ComputeType }): Promise<ComputeInstance> {
    if (this.rows.some((row) => row.databaseId === input.databaseId && row.status !== 'TERMINATED')) {
      throw new ConflictError('compute_instance_exists', 'exists');
    }
    const row: ComputeInstance = { id: input.id, databaseId: input.databaseId, name: input.name, instanceType: input.type, desiredInstanceType: input.type, status: 'PENDING', failure: null, health: null, created: NOW, updated: NOW, deleted: null };
    this.rows.push(row);
    return row;
  }

  async listForDatabase(databaseId: string, window: InstanceWindow): Promise<ComputeInstance[]> {
    return this.rows.filter((row) => row.databaseId === databaseId && (!window.end || row.created <= window.end) && (!window.start || !row.deleted || row.deleted >= window.start));
  }

  async find(databaseId: string, id: string): Promise<ComputeInstance | null> {
    return this.rows.find((row) => row.databaseId === databaseId && row.id === id) ?? null;
  }

  async update(databaseId: string, id: string, changes: { name?: string; desiredType?: ComputeType }): Promise<ComputeInstance | null> {
    const row = await this.find(databaseId, id);
    if (!row || row.status === 'DELETING' || row.status === 'TERMINATED') return null;
    if (changes.name !== undefined) row.name = changes.name;
    if (changes.desiredType) row.desiredInstanceType = changes.desiredType;
    return row;
  }

  async markDeleting(databaseId: string, id: string): Promise<ComputeInstance | null> {
    const row = await this.find(databaseId, id);
    if (row && row.status !== 'TERMINATED') row.status = 'DELETING';
    return row;
  }
}

describe('compute types', () => {
  it('shows memory in GiB when whole, MiB otherwise', () => {
    expect(computeType({ id: 'a', computeSize: 'a', memoryMiB: 2048, hourlyCost: 1, maxConnections: 50 }).memory).to.equal('2 GiB');
    expect(computeType({ id: 'a', computeSize: 'a', memoryMiB: 1536, hourlyCost: 1, maxConnections: 50 }).memory).to.equal('1536 MiB');
  });

  it('refuses ids that are not plain names, and figures out of range', () => {
    expect(() => computeType({ id: 'a b', computeSize: 'a', memoryMiB: 1024, hourlyCost: 1, maxConnections: 50 })).to.throw(/1-64 letters/);
    expect(() => computeType({ id: 'a', computeSize: 'a', memoryMiB: 64, hourlyCost: 1, maxConnections: 50 })).to.throw(/memoryMiB/);
    expect(() => computeType({ id: 'a', computeSize: 'a', memoryMiB: 1024, hourlyCost: -1, maxConnections: 50 })).to.throw(/hourlyCost/);
    expect(() => computeType({ id: 'a', computeSize: 'a', memoryMiB: 1024, hourlyCost: 1, maxConnections: 5 })).to.throw(/maxConnections/);
  });

  it('refuses a catalog where a name means two types, by id or by size', () => {
    const a = computeType({ id: 'x', computeSize: 'small', memoryMiB: 1024, hourlyCost: 1, maxConnections: 50 });
    const b = computeType({ id: 'small', computeSize: 'big', memoryMiB: 2048, hourlyCost: 2, maxConnections: 50 });
    expect(() => assertCatalog([a, b])).to.throw(/'small' names two types/);
    expect(() => assertCatalog([])).to.throw(/empty/);
    expect(() => assertCatalog(DEFAULT_COMPUTE_TYPES)).not.to.throw();
  });

  it('resolves an instanceSize by computeSize or id, and names the known ones otherwise', () => {
    expect(resolveComputeType(DEFAULT_COMPUTE_TYPES, 'medium')).to.equal(MEDIUM);
    expect(resolveComputeType(DEFAULT_COMPUTE_TYPES, 'ct_medium')).to.equal(MEDIUM);
    expect(() => resolveComputeType(DEFAULT_COMPUTE_TYPES, 'MEDIUM')).to.throw(/known: small \(ct_small\), medium \(ct_medium\), large \(ct_large\)/);
  });

  it('derives the server settings from the memory and connections', () => {
    expect(serverSettings(SMALL)).to.deep.equal({
      shared_buffers: '256MB',
      effective_cache_size: '768MB',
      maintenance_work_mem: '64MB',
      work_mem: '4096kB',
      max_connections: '100',
    });
    expect(serverSettings({ memoryMiB: 65_536, maxConnections: 100 })).to.include({ maintenance_work_mem: '2048MB', work_mem: '167772kB' });
  });
});

describe('compute use cases', () => {
  let p: ReturnType<typeof fakePlatform>;
  let instances: FakeInstances;
  let nudges: number;
  let deps: ReturnType<typeof fakePlatform>['deps'] & { computeInstances: FakeInstances; computeCatalog: readonly ComputeType[]; computeProvisioner: { nudge(): void } };

  beforeEach(() => {
    p = fakePlatform();
    instances = new FakeInstances();
    nudges = 0;
    deps = { ...p.deps, computeInstances: instances, computeCatalog: DEFAULT_COMPUTE_TYPES, computeProvisioner: { nudge: () => void nudges++ } };
  });

  it('lists the catalog to members of the workspace only, and refuses user tokens', async () => {
    expect(await listComputeTypes(deps, p.bob, 'acme')).to.equal(DEFAULT_COMPUTE_TYPES);
    expect(await failure(listComputeTypes(deps, p.mallory, 'acme'))).to.include({ code: 'workspace_not_found' });
    const { caller } = await p.user('u@example.test', 'pw');
    expect(await failure(listComputeTypes(deps, caller, 'acme'))).to.include({ code: 'developer_token_required' });
  });

  it('creates a PENDING instance of the named type and wakes the reconciler', async () => {
    const { instance } = await createComputeInstance(deps, p.alice, MAIN, { instanceName: 'primary', instanceSize: 'small' });
    expect(instance).to.include({ databaseId: p.main.id, name: 'primary', status: 'PENDING' });
    expect(instance.instanceType).to.equal(SMALL);
    expect(nudges).to.equal(1);
  });

  it('refuses a bad name or size, a database not READY, and a platform without compute, creating nothing', async () => {
    expect(await failure(createComputeInstance(deps, p.alice, MAIN, { instanceName: '-x', instanceSize: 'small' }))).to.include({ code: 'invalid_instance_name' });
    expect(await failure(createComputeInstance(deps, p.alice, MAIN, { instanceName: 'x', instanceSize: 'tiny' }))).to.include({ code: 'unknown_instance_size' });
    expect(await failure(createComputeInstance(deps, p.alice, { workspaceSlug: 'acme', databaseName: 'building' }, { instanceName: 'x', instanceSize: 'small' }))).to.include({
      code: 'database_not_ready',
    });
    expect(await failure(createComputeInstance({ ...deps, computeCatalog: [] }, p.alice, MAIN, { instanceName: 'x', instanceSize: 'small' }))).to.include({
      code: 'compute_not_available',
    });
    expect(instances.rows).to.deep.equal([]);
    expect(nudges).to.equal(0);
  });

  it('says a database is expandable only when READY, without an instance, on a platform with compute', () => {
    expect(canExpand(p.main, DEFAULT_COMPUTE_TYPES)).to.equal(true);
    expect(canExpand({ ...p.main, instanceId: 'i' }, DEFAULT_COMPUTE_TYPES)).to.equal(false);
    expect(canExpand(p.building, DEFAULT_COMPUTE_TYPES)).to.equal(false);
    expect(canExpand(p.main, [])).to.equal(false);
  });

  it('refuses a window that ends before it starts', async () => {
    const window = { start: new Date('2026-01-02T00:00:00Z'), end: new Date('2026-01-01T00:00:00Z') };
    expect(await failure(listComputeInstances(deps, p.alice, MAIN, window))).to.include({ code: 'invalid_window' });
  });

  it('resizes by setting the desired type; refuses changes once deleting, and resizing a FAILED instance', async () => {
    const { instance } = await createComputeInstance(deps, p.alice, MAIN, { instanceName: 'primary', instanceSize: 'small' });
    const resized = await updateComputeInstance(deps, p.alice, MAIN, instance.id, { instanceSize: 'medium' });
    expect(resized.instance.desiredInstanceType).to.equal(MEDIUM);
    expect(resized.instance.instanceType).to.equal(SMALL);
    instance.status = 'FAILED';
    expect(await failure(updateComputeInstance(deps, p.alice, MAIN, instance.id, { instanceSize: 'large' }))).to.include({ code: 'compute_instance_not_changeable' });
    expect((await updateComputeInstance(deps, p.alice, MAIN, instance.id, { instanceName: 'renamed' })).instance.name).to.equal('renamed');
    await deleteComputeInstance(deps, p.alice, MAIN, instance.id);
    expect(instance.status).to.equal('DELETING');
    expect(await failure(updateComputeInstance(deps, p.alice, MAIN, instance.id, { instanceName: 'late' }))).to.include({ code: 'compute_instance_not_changeable' });
  });

  it('answers an instance of another database as not found', async () => {
    const { instance } = await createComputeInstance(deps, p.alice, MAIN, { instanceName: 'primary', instanceSize: 'small' });
    const other = { workspaceSlug: 'globex', databaseName: 'main' };
    expect(await failure(updateComputeInstance(deps, p.mallory, other, instance.id, { instanceName: 'mine' }))).to.include({ code: 'compute_instance_not_found' });
    expect(await failure(deleteComputeInstance(deps, p.mallory, other, instance.id))).to.include({ code: 'compute_instance_not_found' });
    expect(instance.status).to.equal('PENDING');
  });
});
