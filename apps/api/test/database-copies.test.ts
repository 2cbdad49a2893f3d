import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createTestControlPlane, developerWithWorkspace, expectApiError, startAppProcess, uniqueDatabaseName, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import type { EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { eventually, freePort, httpClient, query, scratchDir } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { PGBACKREST, requirePgbackrest, startBackedUpCluster } from './support/backed-up-cluster.js';
import { SERVED_REGIONS, TEST_AUDIENCE, TEST_ISSUER } from './support/platform.js';

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Point-in-time restores and branches (POST W/databases with `from`), on a platform of this file's
 * own whose cluster archives its WAL and is backed up (the other files' servers are not).
 */
describe('point-in-time restores and branches', function () {
  this.timeout(300_000);
  const dir = scratchDir('platform-copies-pg-');
  const computeDir = join(dir, 'compute');
  let server: EmbeddedPostgresHandle;
  let controlPlane: TestControlPlane;
  let api: RunningApi;
  let request: ReturnType<typeof httpClient>;

  before(async function () {
    requirePgbackrest(this);
    const backedUp = await startBackedUpCluster(dir, { stanza: 'copies-test', repoDir: join(dir, 'repo') });
    ({ server, controlPlane } = backedUp);
    const env = { ...backedUp.env, RECONCILE_INTERVAL_MS: '200', COMPUTE_TYPES: '[]', COMPUTE_DIR: computeDir };
    api = await startApi(loadApiConfig(env), { logger: pino({ level: 'error' }) });
    request = httpClient(api.url);
    // The first full backup: before it, no instant can be restored.
    await eventually(async () => {
      const ready = await request('GET', '/readyz');
      return ready.body?.backups?.[0]?.restorableFrom ? true : undefined;
    }, 90_000, 'the first base backup');
  });

  after(async function () {
    await api?.close();
    await controlPlane?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An API under test: the in-process one, or one run as its own process in the recovery tests. */
  type Api = { controlPlane: TestControlPlane; request: ReturnType<typeof httpClient> };
  const p = (): Api => ({ controlPlane, request });

  async function waitReady(token: string, slug: string, name: string, api: Api = p()) {
    return eventually(async () => {
      // After a kill -9 and a restart on the same port, a kept-alive connection to the killed
      // process may still be picked for the first poll: a reset connection is one more poll.
      const found = await api.request('GET', `/workspaces/${slug}/databases/${name}`, { token }).catch((error: Error & { cause?: { code?: string } }) => {
        if (error.cause?.code === 'ECONNRESET' || error.cause?.code === 'ECONNREFUSED') return undefined;
        throw error;
      });
      return found?.body?.status === 'READY' ? found.body : undefined;
    }, 180_000, `database ${name} to be READY`);
  }

  /** A credential of the database, and its URL straight to the cluster (no gateway in this file). */
  async function credentialOf(token: string, D: string, api: Api = p()) {
    const created = await api.request('POST', `${D}/credentials`, { token });
    expect(created.status, created.text).to.equal(201);
    const url = new URL(server.url(await physicalNameOf(created.body.database.id, api)));
    url.username = created.body.id;
    url.password = encodeURIComponent(created.body.password);
    return { id: created.body.id as string, url: url.href };
  }

  async function physicalNameOf(id: string, api: Api = p()): Promise<string> {
    const [row] = await query<{ physical_name: string }>(api.controlPlane.url, 'select physical_name from databases where id = $1', [id]);
    return row.physical_name;
  }

  /** A READY database with a tenant and rows t1, t2, t3 committed a moment apart; `between` is an instant after t2's commit and before t3's. */
  async function sourceWithThreeRows(api: Api = p()) {
    const owner = await developerWithWorkspace(api);
    const name = uniqueDatabaseName('src');
    const created = await api.request('POST', `/workspaces/${owner.slug}/databases`, { token: owner.token, json: { databaseName: name, region: 'AWS_US_WEST_2' } });
    expect(created.status, created.text).to.equal(201);
    const source = await waitReady(owner.token, owner.slug, name, api);
    const D = `/workspaces/${owner.slug}/databases/${name}`;
    const tenant = await api.request('POST', `${D}/tenants`, { token: owner.token, json: { name: 'Copied tenant' } });
    expect(tenant.status, tenant.text).to.equal(201);
    const credential = await credentialOf(owner.token, D, api);
    await query(credential.url, `create table marks (label text primary key, at timestamptz not null default clock_timestamp())`);
    await query(credential.url, `insert into marks (label) values ('t1')`);
    await sleep(300);
    await query(credential.url, `insert into marks (label) values ('t2')`);
    await sleep(300);
    const [{ now }] = await query<{ now: Date }>(credential.url, 'select clock_timestamp() as now');
    await sleep(300);
    await query(credential.url, `insert into marks (label) values ('t3')`);
    return { ...owner, name, source, D, credential, tenant: tenant.body, between: now };
  }

  const labels = async (url: string) => (await query<{ label: string }>(url, 'select label from marks order by label')).map((row) => row.label);

  it('restores a database to an instant between two commits: exactly the rows committed by then, its tenants, none of its credentials', async function () {
    const src = await sourceWithThreeRows();
    const name = uniqueDatabaseName('restored');
    const started = Date.now();
    const created = await request('POST', `/workspaces/${src.slug}/databases`, {
      token: src.token,
      json: { databaseName: name, from: { database: src.name, at: src.between.toISOString() } },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.deep.include({ name, status: 'REQUESTED', region: src.source.region, source: { id: src.source.id, at: src.between.toISOString() } });
    // The source serves meanwhile, unchanged.
    expect(await labels(src.credential.url)).to.deep.equal(['t1', 't2', 't3']);
    const restored = await waitReady(src.token, src.slug, name);
    console.log(`      restore of a small database to a point in time: ${Date.now() - started} ms from the request to READY`);
    expect(restored.source).to.deep.equal({ id: src.source.id, at: src.between.toISOString() });
    const D2 = `/workspaces/${src.slug}/databases/${name}`;
    const physicalName = await physicalNameOf(restored.id);
    // No credential came with it: the source's credential does not log in to it.
    const stolen = new URL(src.credential.url);
    stolen.pathname = `/${physicalName}`;
    const refused = await query(stolen.href, 'select 1').then(
      () => null,
      (error: Error & { code?: string }) => error.code,
    );
    expect(refused).to.be.oneOf(['28000', '42501']);
    const credentials = await request('GET', `${D2}/credentials`, { token: src.token });
    expect(credentials.status, credentials.text).to.equal(200);
    expect(credentials.body).to.deep.equal([]);
    const credential = await credentialOf(src.token, D2);
    expect(await labels(credential.url)).to.deep.equal(['t1', 't2']);
    const tenants = await request('GET', `${D2}/tenants`, { token: src.token });
    expect(tenants.body.map((tenant: { id: string }) => tenant.id)).to.deep.equal([src.tenant.id]);
    // The copy's roles are its own; the source's are untouched and it still has its three rows.
    const [roles] = await query<{ own: number; copied: number }>(
      server.url('postgres'),
      `select count(*) filter (where rolname like $1)::int as own, count(*) filter (where rolname like $2 || '%')::int as copied from pg_roles`,
      [`${physicalName}\\_%`, src.credential.id],
    );
    expect(roles.own).to.be.greaterThanOrEqual(5);
    expect(roles.copied).to.equal(1);
    expect(await labels(src.credential.url)).to.deep.equal(['t1', 't2', 't3']);
    expect(readdirSync(join(computeDir, 'restores'))).to.deep.equal([]);
  });

  it('branches a database as it is now: every acknowledged row, the source serving throughout', async function () {
    const src = await sourceWithThreeRows();
    const name = uniqueDatabaseName('branch');
    const started = Date.now();
    const created = await request('POST', `/workspaces/${src.slug}/databases`, { token: src.token, json: { databaseName: name, from: { database: src.source.id } } });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.source.id).to.equal(src.source.id);
    // Written while the branch is built: in the source, not in the branch.
    await query(src.credential.url, `insert into marks (label) values ('t4')`);
    const branch = await waitReady(src.token, src.slug, name);
    console.log(`      branch of a small database: ${Date.now() - started} ms from the request to READY`);
    const credential = await credentialOf(src.token, `/workspaces/${src.slug}/databases/${branch.name}`);
    expect(await labels(credential.url)).to.deep.equal(['t1', 't2', 't3']);
    expect(await labels(src.credential.url)).to.deep.equal(['t1', 't2', 't3', 't4']);
    // The branch is a database like another: it is written to, and branched in turn.
    await query(credential.url, `insert into marks (label) values ('b1')`);
    expect(await labels(credential.url)).to.deep.equal(['b1', 't1', 't2', 't3']);
  });

  it('runs the customer’s code of a copy only as the database’s own restoring login: a trap that a superuser would spring gains nothing', async function () {
    const src = await sourceWithThreeRows();
    const role = src.credential.id.replace(/[^a-z0-9_]/g, '');
    // Evaluated while the copy is restored (constraint, index expression) and on writes (trigger,
    // default): run with a superuser's rights, it makes the source's credential (a role of this
    // cluster) a superuser; whoever runs it powerful scans a marker table, which the server counts.
    for (const statement of [
      'create table seen_powerful ()',
      `create function trap() returns int language plpgsql as $f$
       begin
         if (select rolsuper or rolcreaterole or rolbypassrls from pg_catalog.pg_roles where rolname = current_user)
            or (select rolsuper from pg_catalog.pg_roles where rolname = session_user) then
           perform from public.seen_powerful;
           execute 'alter role ${role} superuser';
         end if;
         return 1;
       end $f$`,
      `create function trap_i(x int) returns int language plpgsql immutable as $f$ begin return x + public.trap() - 1; end $f$`,
      `create function trap_t() returns trigger language plpgsql as $f$ begin perform public.trap(); return new; end $f$`,
      'create table goods (x int check (public.trap() = 1), y int default public.trap())',
      'create index goods_expression on goods ((public.trap_i(x)))',
      'create trigger goods_trap before insert on goods for each row execute function public.trap_t()',
      'insert into goods (x) values (1)',
    ]) {
      await query(src.credential.url, statement);
    }
    const name = uniqueDatabaseName('trapped');
    const created = await request('POST', `/workspaces/${src.slug}/databases`, { token: src.token, json: { databaseName: name, from: { database: src.name } } });
    expect(created.status, created.text).to.equal(201);
    await waitReady(src.token, src.slug, name);
    const credential = await credentialOf(src.token, `/workspaces/${src.slug}/databases/${name}`);
    expect(await query(credential.url, 'select x, y from goods')).to.deep.equal([{ x: 1, y: 1 }]);
    // Counted since the copy was made on this cluster: restoring it evaluated the traps, as nobody powerful.
    expect(await query(credential.url, `select seq_scan::int as scans from pg_stat_user_tables where relname = 'seen_powerful'`)).to.deep.equal([{ scans: 0 }]);
    expect(await query(server.url('postgres'), 'select rolsuper, rolcreaterole, rolbypassrls from pg_roles where rolname = $1', [src.credential.id])).to.deep.equal([
      { rolsuper: false, rolcreaterole: false, rolbypassrls: false },
    ]);
  });

  it('refuses an instant outside the window with 400 and the window, an unknown or foreign source with 404', async function () {
    const src = await sourceWithThreeRows();
    const W = `/workspaces/${src.slug}/databases`;
    const early = await request('POST', W, { token: src.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.name, at: '2001-01-01T00:00:00Z' } } });
    expectApiError(early, 400, 'restore_point_outside_window');
    expect(early.body.message).to.match(/can be restored from \d{4}-\d\d-\d\dT[0-9:.]+Z to now/);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expectApiError(await request('POST', W, { token: src.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.name, at: future } } }), 400, 'restore_point_outside_window');
    expectApiError(await request('POST', W, { token: src.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.name, at: 'yesterday' } } }), 400);
    expectApiError(await request('POST', W, { token: src.token, json: { databaseName: uniqueDatabaseName(), from: { database: 'no_such_db' } } }), 404, 'database_not_found');
    expectApiError(await request('POST', W, { token: src.token, json: { databaseName: uniqueDatabaseName() } }), 400, 'validation_failed');
    // A developer of another workspace names this one's database from theirs: not found.
    const other = await developerWithWorkspace(p());
    const foreign = await request('POST', `/workspaces/${other.slug}/databases`, { token: other.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.source.id } } });
    expectApiError(foreign, 404, 'database_not_found');
    const byName = await request('POST', `/workspaces/${other.slug}/databases`, { token: other.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.name } } });
    expectApiError(byName, 404, 'database_not_found');
    // Nor in the source's workspace, which they are no member of.
    expectApiError(await request('POST', W, { token: other.token, json: { databaseName: uniqueDatabaseName(), from: { database: src.name } } }), 404);
    // The name of a live database is taken, as for any new database.
    expectApiError(await request('POST', W, { token: src.token, json: { databaseName: src.name, from: { database: src.name } } }), 409, 'database_name_taken');
  });

  describe('killed mid-copy (kill -9 of the API)', function () {
    let ownControlPlane: TestControlPlane;
    const running: AppProcess[] = [];

    before(async function () {
      // A control plane of its own: the in-process API must not finish the work for the restarted one.
      ownControlPlane = await createTestControlPlane({ adminUrl: server.url('postgres'), urlFor: (name: string) => server.url(name), stop: async () => {} }, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
    });

    after(async function () {
      for (const { child } of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await ownControlPlane?.close();
    });

    /** Postgres processes whose command line names the folder (a scratch server left running). */
    function serversIn(folder: string): number[] {
      return readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(folder);
          } catch {
            return false;
          }
        })
        .map(Number);
    }

    for (const step of ['after_scratch_restore', 'after_copy_database']) {
      it(`converges on restart when killed ${step.replace(/_/g, ' ')}: never READY half-restored, no scratch server or folder left`, async function () {
        const port = await freePort();
        const env = {
          ...ownControlPlane.env,
          PUBLIC_BASE_URL: TEST_AUDIENCE,
          OAUTH_ISSUER: TEST_ISSUER,
          PLATFORM_REGIONS: SERVED_REGIONS.join(','),
          LOG_LEVEL: 'error',
          RECONCILE_INTERVAL_MS: '200',
          PASSWORD_HASH_LOGN: '10',
          COMPUTE_TYPES: '[]',
          COMPUTE_DIR: computeDir,
          BACKUP_PGBACKREST: PGBACKREST,
          // The in-process API takes this cluster's backups.
          BACKUPS: 'off',
        };
        const api: Api = { controlPlane: ownControlPlane, request: httpClient(`http://127.0.0.1:${port}`) };
        const doomed = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env: { ...env, PLATFORM_FAULT_POINT: step } });
        running.push(doomed);
        const src = await sourceWithThreeRows(api);
        const name = uniqueDatabaseName('killed');
        // On a loaded machine the kill may come before the answer is written: the row says what was asked.
        const created = await api
          .request('POST', `/workspaces/${src.slug}/databases`, { token: src.token, json: { databaseName: name, from: { database: src.name } } })
          .catch((error: Error) => error);
        if (!(created instanceof Error)) expect(created.status, created.text).to.equal(201);
        expect(await doomed.exited).to.equal('SIGKILL');
        const [row] = await query<{ id: string; status: string }>(ownControlPlane.url, 'select id, status from databases where name = $1 and deleted is null', [name]);
        expect(row.status).to.equal('REQUESTED');
        const physicalName = await physicalNameOf(row.id, api);
        const scratch = join(computeDir, 'restores', physicalName);
        if (step === 'after_scratch_restore') expect(existsSync(scratch)).to.equal(true);

        const restarted = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env });
        running.push(restarted);
        const copy = await waitReady(src.token, src.slug, name, api);
        const credential = await credentialOf(src.token, `/workspaces/${src.slug}/databases/${copy.name}`, api);
        expect(await labels(credential.url)).to.deep.equal(['t1', 't2', 't3']);
        expect(existsSync(scratch)).to.equal(false);
        expect(serversIn(scratch)).to.deep.equal([]);
        expect(await labels(src.credential.url)).to.deep.equal(['t1', 't2', 't3']);
        await restarted.stop();
      });
    }
  });
});
