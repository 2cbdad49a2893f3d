import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { withDeadline } from '@platform/deadline';
import type { ClusterDirectory, ClusterDriver, Database, Region, Workspace } from '@platform/domain';
// Integration test: the reconciler runs with the real control-plane store over a real PostgreSQL.
import { MikroProvisioningStore, openRepositories } from '@platform/persistence';
import { databaseExists, deferred, eventually, FakeClock, query, rejection, startTestPostgres, withClient, type TestPostgres } from '@platform/testing';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { BUILT_IN_SCHEMA_STEPS } from '@platform/data-plane';
import { PgClusterDirectory } from './cluster-driver.js';
import { DatabaseReconciler, type DatabaseReconcilerOptions } from './database-reconciler.js';

const TOKENS = { issuer: 'http://oauth.test', audience: 'http://api.test' };
const SERVED: readonly Region[] = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'];

interface Row {
  status: string;
  attempts: number;
  last_error: string | null;
  deleted: Date | null;
  closed: Date | null;
  dropped: Date | null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}

/** A log that keeps what it is told, so tests can read it. */
function memoryLog() {
  const info: { obj: any; msg: string }[] = [];
  const error: { obj: any; msg: string }[] = [];
  return {
    info,
    error,
    log: {
      info: (obj: object, msg: string) => void info.push({ obj, msg }),
      error: (obj: object, msg: string) => void error.push({ obj, msg }),
    },
  };
}

/** Delegates to real clusters, but holds createDatabase at a gate the test opens. */
function gatedClusters(inner: ClusterDirectory, gate: Promise<void>, entered: () => void): ClusterDirectory {
  return {
    regions: () => inner.regions(),
    forDatabase: (database) => inner.forDatabase(database),
    forRegion(region: Region): ClusterDriver {
      const driver = inner.forRegion(region);
      return {
        createDatabase: async (name) => {
          entered();
          await gate;
          await driver.createDatabase(name);
        },
        installBuiltInSchema: (name) => driver.installBuiltInSchema(name),
        upgradeBuiltInSchema: (name) => driver.upgradeBuiltInSchema(name),
        verifyDatabase: (name) => driver.verifyDatabase(name),
        closeDatabase: (name) => driver.closeDatabase(name),
        reopenDatabase: (name) => driver.reopenDatabase(name),
        dropDatabase: (name) => driver.dropDatabase(name),
        listDatabases: (prefix) => driver.listDatabases(prefix),
        connectionUrl: (name) => driver.connectionUrl(name),
        activity: () => driver.activity(),
        auditCustomerRoles: (name) => driver.auditCustomerRoles(name),
        close: () => driver.close(),
      };
    },
  };
}

describe('DatabaseReconciler', function () {
  let postgres: TestPostgres;
  let cp: TestControlPlane;
  let clusters: PgClusterDirectory;
  let clock: FakeClock;
  let store: MikroProvisioningStore;
  let workspace: Workspace;
  const reconcilers: DatabaseReconciler[] = [];
  const physicalNames: string[] = [];

  before(async function () {
    postgres = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createTestControlPlane(postgres, TOKENS);
    clusters = new PgClusterDirectory(SERVED, {
      AWS_US_WEST_2: postgres.adminUrl,
      AWS_EU_CENTRAL_1: postgres.adminUrl,
      AZURE_EASTUS: postgres.adminUrl,
    });
    clock = new FakeClock();
    store = new MikroProvisioningStore(cp.orm, clock);
    const developer = await cp.newDeveloper();
    workspace = await openRepositories(cp.orm).workspaces.create({
      name: 'Reconciled',
      slug: `rec-${randomBytes(4).toString('hex')}`,
      ownerId: developer.id,
    });
  });

  afterEach(async function () {
    await Promise.all(reconcilers.splice(0).map((reconciler) => reconciler.stop()));
    await clusters?.close();
    const names = physicalNames.splice(0);
    await withClient(postgres.adminUrl, async (client) => {
      for (const name of names) await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
    });
    await cp?.close();
  });

  after(async function () {
    await postgres?.stop();
  });

  function reconciler(options: Partial<DatabaseReconcilerOptions> = {}): DatabaseReconciler {
    const created = new DatabaseReconciler({ store, clusters, intervalMs: 25, log: memoryLog().log, ...options });
    reconcilers.push(created);
    return created;
  }

  async function requestDatabase(region: Region = 'AWS_US_WEST_2'): Promise<Database> {
    const database = await openRepositories(cp.orm).databases.create({
      id: randomUUID(),
      workspace,
      name: `db_${randomBytes(4).toString('hex')}`,
      region,
    });
    physicalNames.push(database.physicalName);
    return database;
  }

  /** Marks the database deleted at the clock's time, restorable for `retentionMs` (0: due to be dropped at once). */
  function markDeleted(database: Database, retentionMs = 0) {
    const deleted = clock.now();
    return openRepositories(cp.orm).databases.markDeleted(database, { deleted, purgeAfter: new Date(deleted.getTime() + retentionMs) });
  }

  /** Whether PostgreSQL lets the database be connected to at all (pg_database.datallowconn). */
  async function allowsConnections(physicalName: string): Promise<boolean> {
    const [found] = await query<{ datallowconn: boolean }>(postgres.adminUrl, 'select datallowconn from pg_database where datname = $1', [physicalName]);
    return found.datallowconn;
  }

  async function row(id: string): Promise<Row> {
    const [found] = await query<Row>(cp.url, 'select status, attempts, last_error, deleted, closed, dropped from databases where id = $1', [id]);
    return found;
  }

  function untilStatus(id: string, status: string): Promise<Row> {
    return eventually(async () => {
      const found = await row(id);
      return found.status === status ? found : undefined;
    }, 15_000, `database ${id} to be ${status}`);
  }

  async function schemaSteps(physicalName: string): Promise<number[]> {
    try {
      const rows = await query<{ version: number }>(
        postgres.urlFor(physicalName),
        `select version from platform.schema_steps where to_regclass('platform.schema_steps') is not null order by version`,
      );
      return rows.map((found) => found.version);
    } catch (error) {
      if ((error as { code?: string }).code === '42P01') return [];
      throw error;
    }
  }

  it('after start(), moves a REQUESTED database to READY with its PostgreSQL database', async function () {
    const logs = memoryLog();
    const database = await requestDatabase();
    reconciler({ log: logs.log }).start();

    const ready = await untilStatus(database.id, 'READY');
    expect(ready).to.deep.include({ attempts: 0, last_error: null, deleted: null });
    expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(true);
    expect(await schemaSteps(database.physicalName)).to.deep.equal(BUILT_IN_SCHEMA_STEPS.map((step) => step.version));
    expect(logs.error).to.deep.equal([]);
    expect(logs.info.filter((entry) => entry.msg === 'database advanced').map((entry) => entry.obj.status)).to.deep.equal(['BUILT', 'READY']);
  });

  it('picks up a database requested after start when nudged', async function () {
    const running = reconciler({ intervalMs: 60_000 });
    running.start();
    const first = await requestDatabase();
    running.nudge();
    await untilStatus(first.id, 'READY');

    const second = await requestDatabase('AWS_EU_CENTRAL_1');
    running.nudge();
    await untilStatus(second.id, 'READY');
    expect(await databaseExists(postgres.adminUrl, second.physicalName)).to.equal(true);
  });

  it('a nudge from a request whose deadline has passed runs a pass the deadline does not cut', async function () {
    const logs = memoryLog();
    let claimsEnded = 0;
    // The store itself, but counting ended claims: the pass at start is over once each worker's has.
    const counting: MikroProvisioningStore = Object.create(store);
    counting.claim = async (...args) => {
      try {
        return await store.claim(...args);
      } finally {
        claimsEnded += 1;
      }
    };
    const running = reconciler({ store: counting, intervalMs: 60_000, workers: 1, log: logs.log });
    running.start();
    await eventually(async () => (claimsEnded >= 1 ? true : undefined), 10_000, 'the pass at start');
    await sleep(10);
    const database = await requestDatabase();
    withDeadline(0, () => running.nudge());

    await untilStatus(database.id, 'READY');
    expect(logs.error).to.deep.equal([]);
  });

  it('a crash after CREATE DATABASE leaves the row REQUESTED; once the fault is gone it converges to READY', async function () {
    const logs = memoryLog();
    let faulty = true;
    const faults: string[] = [];
    const database = await requestDatabase();
    reconciler({
      log: logs.log,
      faultPoint: (step) => {
        faults.push(step);
        if (faulty && step === 'after_create_database') throw new Error(`fault injected at ${step}`);
      },
    }).start();

    const failed = await eventually(async () => {
      const found = await row(database.id);
      return found.attempts >= 1 ? found : undefined;
    }, 15_000, 'the injected fault to be recorded');
    expect(failed).to.deep.include({ status: 'REQUESTED', attempts: 1, last_error: 'fault injected at after_create_database' });
    expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(true);
    expect(await schemaSteps(database.physicalName)).to.deep.equal([]);
    expect(logs.error.map((entry) => entry.msg)).to.deep.equal(['provisioning step failed; it will be retried']);

    faulty = false;
    clock.advance(60_000);
    const ready = await untilStatus(database.id, 'READY');
    expect(ready).to.deep.include({ attempts: 0, last_error: null });
    expect(faults).to.deep.equal(['after_create_database', 'after_create_database']);
    expect(await schemaSteps(database.physicalName)).to.deep.equal(BUILT_IN_SCHEMA_STEPS.map((step) => step.version));
    expect(logs.error).to.have.length(1);
  });

  it('a database whose steps fail does not block the others', async function () {
    const logs = memoryLog();
    // Served by the store but not by the clusters: every step on it fails.
    const unserved = await requestDatabase('AZURE_EASTUS');
    const served = await requestDatabase();
    reconciler({ log: logs.log }).start();

    await untilStatus(served.id, 'READY');
    const stuck = await row(unserved.id);
    expect(stuck.status).to.equal('REQUESTED');
    expect(stuck.attempts).to.be.at.least(1);
    expect(stuck.last_error).to.include('AZURE_EASTUS');
    expect(logs.error.length).to.be.at.least(1);
    expect(await databaseExists(postgres.adminUrl, unserved.physicalName)).to.equal(false);
  });

  it('settleNow closes a deleted database: new connections are refused, open sessions end, the data stays', async function () {
    const database = await requestDatabase();
    const builder = reconciler();
    builder.start();
    await untilStatus(database.id, 'READY');
    await builder.stop();

    const session = new pg.Client({ connectionString: databaseUrl(postgres.adminUrl, database.physicalName) });
    // The server's 57P01 first, then the socket's end.
    const ended = new Promise<Error & { code?: string }>((resolve) => session.on('error', resolve));
    await session.connect();
    try {
      await markDeleted(database, 60_000);
      const logs = memoryLog();
      // A reconciler that was never started still settles on request.
      await reconciler({ log: logs.log }).settleNow(database.id);

      expect((await ended).code).to.equal('57P01');
      expect(await allowsConnections(database.physicalName)).to.equal(false);
      // Even the cluster's superuser is turned away; the database itself is kept.
      const refused = await rejection(query(databaseUrl(postgres.adminUrl, database.physicalName), 'select 1'));
      expect(refused).to.include({ code: '55000', routine: 'CheckMyDatabase' });
      expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(true);
      expect((await row(database.id)).closed).to.be.instanceOf(Date);
      expect(logs.error).to.deep.equal([]);
      expect(logs.info.map((entry) => entry.msg)).to.deep.equal(['deleted database closed']);

      // Restored: reopened, with its built-in schema as it was.
      await openRepositories(cp.orm).databases.restore(workspace, database.id, { now: clock.now() });
      await reconciler({ log: logs.log }).settleNow(database.id);
      expect(await allowsConnections(database.physicalName)).to.equal(true);
      expect(await schemaSteps(database.physicalName)).to.deep.equal(BUILT_IN_SCHEMA_STEPS.map((step) => step.version));
      expect(await row(database.id)).to.deep.include({ closed: null, deleted: null, status: 'READY' });
      expect(logs.info.map((entry) => entry.msg)).to.deep.equal(['deleted database closed', 'restored database reopened']);
    } finally {
      await session.end().catch(() => {});
    }
  });

  it('the loop drops a closed database once its retention has ended, and the roles of its credentials', async function () {
    const database = await requestDatabase();
    const running = reconciler();
    running.start();
    await untilStatus(database.id, 'READY');
    const role = await clusters.createLoginRole({ ...database, status: 'READY' }, { password: 'a long enough password', tenantId: null });
    await markDeleted(database, 60_000);
    running.nudge();
    await eventually(async () => ((await row(database.id)).closed ? true : undefined), 15_000, 'the database to be closed');
    expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(true);

    clock.advance(60_000);
    running.nudge();
    await eventually(async () => ((await row(database.id)).dropped ? true : undefined), 15_000, 'the database to be dropped');
    expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(false);
    expect(await query(postgres.adminUrl, 'select 1 from pg_roles where rolname = $1', [role])).to.deep.equal([]);
  });

  it('settleNow drops a deleted database whose retention has ended, ending its open sessions', async function () {
    const database = await requestDatabase();
    const builder = reconciler();
    builder.start();
    await untilStatus(database.id, 'READY');
    await builder.stop();

    const session = new pg.Client({ connectionString: databaseUrl(postgres.adminUrl, database.physicalName) });
    session.on('error', () => {});
    await session.connect();

    try {
      await markDeleted(database);
      const logs = memoryLog();
      await reconciler({ log: logs.log }).settleNow(database.id);

      expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(false);
      const dropped = await row(database.id);
      expect(dropped.deleted).to.be.instanceOf(Date);
      expect(dropped.dropped).to.be.instanceOf(Date);
      expect(logs.error).to.deep.equal([]);
      expect(logs.info.map((entry) => entry.msg)).to.deep.equal(['database dropped']);
    } finally {
      await session.end().catch(() => {});
    }
  });

  it('settleNow logs a failed step instead of throwing, and leaves it to be retried', async function () {
    const database = await requestDatabase('AZURE_EASTUS');
    await markDeleted(database);
    const logs = memoryLog();

    await reconciler({ log: logs.log }).settleNow(database.id);

    expect(logs.error.map((entry) => entry.msg)).to.deep.equal(['database step failed; it will be retried']);
    expect(logs.error[0].obj.databaseId).to.equal(database.id);
    expect(await row(database.id)).to.deep.include({ dropped: null, attempts: 1 });
  });

  it('stop() resolves, and nothing is provisioned after it', async function () {
    const running = reconciler();
    running.start();
    const first = await requestDatabase();
    running.nudge();
    await untilStatus(first.id, 'READY');

    await running.stop();
    const later = await requestDatabase();
    running.nudge();
    // Many reconcile intervals pass; a stopped reconciler must not touch the new row.
    await sleep(500);
    expect(await row(later.id)).to.deep.include({ status: 'REQUESTED', attempts: 0 });
    expect(await databaseExists(postgres.adminUrl, later.physicalName)).to.equal(false);
  });

  it('stop() waits for the step in progress, which commits, and starts no further step', async function () {
    const gate = deferred();
    const entered = deferred();
    const database = await requestDatabase();
    const running = reconciler({ clusters: gatedClusters(clusters, gate.promise, entered.resolve) });
    running.start();
    await entered.promise;

    let stopped = false;
    const stopping = running.stop().then(() => {
      stopped = true;
    });
    await sleep(200);
    expect(stopped, 'stop() resolved while a step was still running').to.equal(false);

    gate.resolve();
    await stopping;
    expect(await row(database.id)).to.deep.include({ status: 'BUILT', attempts: 0 });
    await sleep(300);
    expect((await row(database.id)).status).to.equal('BUILT');
  });
});
