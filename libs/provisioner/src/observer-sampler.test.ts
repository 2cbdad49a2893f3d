import { expect } from 'chai';
import type { ClusterActivity, ClusterDirectory, ClusterDriver, ObservedDatabase, ObserverMinute, ObserverStore, Region } from '@platform/domain';
import { ObserverSampler } from './observer-sampler.js';

const REGION: Region = 'AWS_US_WEST_2';

function reporting(activity: () => ClusterActivity | Error): ClusterDriver {
  return {
    activity: async () => {
      const now = activity();
      if (now instanceof Error) throw now;
      return now;
    },
  } as unknown as ClusterDriver;
}

/** A cluster, and a compute instance's server, whose activity the test sets before each sample. */
function clusterReporting(activity: () => ClusterActivity | Error, instanceActivity: () => ClusterActivity | Error = () => new Error('no instance')): ClusterDirectory {
  const cluster = reporting(activity);
  const instance = reporting(instanceActivity);
  return {
    regions: () => [REGION],
    forRegion: () => cluster,
    forDatabase: (database) => (database.server ? instance : cluster),
  };
}

class MemoryObserverStore implements ObserverStore {
  readonly rows: ObserverMinute[] = [];
  readonly databases = new Map<string, ObservedDatabase>([
    ['db_a', { id: 'a', region: REGION, instanceId: null, server: null }],
    ['db_b', { id: 'b', region: REGION, instanceId: null, server: null }],
  ]);
  async liveDatabases() {
    return this.databases;
  }
  async add(rows: ObserverMinute[]) {
    this.rows.push(...rows);
  }
}

describe('ObserverSampler', () => {
  const minute = new Date('2026-11-22T12:00:00Z');
  let activity: ClusterActivity | Error;
  let instanceActivity: ClusterActivity | Error;
  let leader: boolean;
  let store: MemoryObserverStore;
  let sampler: ObserverSampler;
  const warnings: string[] = [];

  beforeEach(() => {
    leader = true;
    store = new MemoryObserverStore();
    activity = { statements: new Map([['db_a', 10]]), backends: new Map(), localProcesses: false };
    instanceActivity = new Error('no instance');
    sampler = new ObserverSampler({
      clusters: clusterReporting(() => activity, () => instanceActivity),
      store,
      intervalMs: 1000,
      isLeader: async () => leader,
      log: { warn: (_details, message) => void warnings.push(message) },
      now: () => new Date(minute.getTime() + 30_000),
    });
  });

  it('takes a baseline first, then adds each database’s statements since the last sample to the minute', async () => {
    await sampler.sampleNow();
    expect(store.rows).to.deep.equal([]);
    activity = { statements: new Map([['db_a', 25], ['db_b', 3]]), backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    expect(store.rows).to.deep.equal([
      { databaseId: 'a', minute, statements: 15, cpuMs: null },
      { databaseId: 'b', minute, statements: 3, cpuMs: null },
    ]);
  });

  it('counts none when the statistics went down (a reset), and null when pg_stat_statements is not loaded', async () => {
    await sampler.sampleNow();
    activity = { statements: new Map([['db_a', 4]]), backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    activity = { statements: null, backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    expect(store.rows.filter((row) => row.databaseId === 'a').map((row) => row.statements)).to.deep.equal([0, null]);
  });

  it('reads the CPU of the database’s backends on this machine, counting a new backend from its start', async () => {
    await sampler.sampleNow();
    // This test's own process stands in for a backend: it has used some CPU since it started.
    activity = { statements: new Map([['db_a', 10]]), backends: new Map([['db_a', [process.pid]]]), localProcesses: true };
    await sampler.sampleNow();
    const [a, b] = store.rows;
    expect(a.cpuMs).to.be.above(0);
    expect(b).to.deep.equal({ databaseId: 'b', minute, statements: 0, cpuMs: 0 });
  });

  it('samples nothing while another replica leads, and starts over from a baseline when it takes over', async () => {
    leader = false;
    await sampler.sampleNow();
    await sampler.sampleNow();
    leader = true;
    await sampler.sampleNow();
    expect(store.rows).to.deep.equal([]);
  });

  it('logs a cluster it cannot reach and measures it from a fresh baseline when it answers again', async () => {
    await sampler.sampleNow();
    activity = new Error('connection refused');
    await sampler.sampleNow();
    expect(warnings).to.include('could not sample a database server');
    activity = { statements: new Map([['db_a', 50]]), backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    expect(store.rows).to.deep.equal([]);
  });

  it('samples a database on a compute instance on the instance’s server, not on the cluster it left', async () => {
    store.databases.set('db_b', { id: 'b', region: REGION, instanceId: 'i-1', server: { host: '127.0.0.1', port: 6001 } });
    instanceActivity = { statements: new Map([['db_b', 100]]), backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    // The cluster still lists the old copy's statements: they are not the database's any more.
    activity = { statements: new Map([['db_a', 12], ['db_b', 999]]), backends: new Map(), localProcesses: false };
    instanceActivity = { statements: new Map([['db_b', 107]]), backends: new Map(), localProcesses: false };
    await sampler.sampleNow();
    expect(store.rows).to.deep.equal([
      { databaseId: 'a', minute, statements: 2, cpuMs: null },
      { databaseId: 'b', minute, statements: 7, cpuMs: null },
    ]);
  });
});
