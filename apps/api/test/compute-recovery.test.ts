import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { databaseUrl } from '@platform/config';
import { eventually, freePort, httpClient, query, scratchDir } from '@platform/testing';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

/** Processes whose command line names `folder`: a postgres server of an instance runs with `-D <folder>/data`. */
function processesUsing(folder: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', `${folder}/data`], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

describe('dedicated compute after a crash (kill -9 of the platform mid-step)', function () {
  this.timeout(180_000);
  let p: TestPlatform;
  let controlPlane: TestControlPlane;
  let computeDir: string;
  const running: AppProcess[] = [];
  let port: number;
  let env: Record<string, string>;
  let request: ReturnType<typeof httpClient>;
  let token: string;
  const D = '/workspaces/crash-compute/databases/survivor';
  let databaseId: string;
  let instanceId: string;

  before(async function () {
    p = await platform();
    // A control plane of its own: no other reconciler may finish the work for the restarted one.
    controlPlane = await createTestControlPlane(p.postgres, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
    computeDir = scratchDir('platform-compute-crash-');
    port = await freePort();
    env = {
      ...controlPlane.env,
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      OAUTH_ISSUER: TEST_ISSUER,
      LOG_LEVEL: 'error',
      RECONCILE_INTERVAL_MS: '200',
      COMPUTE_RECONCILE_MS: '200',
      COMPUTE_DIR: computeDir,
      // The moved database's old copy is dropped 5 s after the move.
      DATABASE_CACHE_MS: '0',
    };
    request = httpClient(`http://127.0.0.1:${port}`);
    ({ token } = await controlPlane.newDeveloper());
  });

  after(async function () {
    this.timeout(60_000);
    for (const app of running) if (app.child.exitCode === null && app.child.signalCode === null) await app.stop();
    await controlPlane.close();
    rmSync(computeDir, { recursive: true, force: true });
  });

  async function start(faultPoint?: string): Promise<AppProcess> {
    const app = await startAppProcess('apps/api/src/main.ts', {
      portVariable: 'API_PORT',
      port,
      env: faultPoint ? { ...env, PLATFORM_FAULT_POINT: faultPoint } : env,
    });
    running.push(app);
    return app;
  }

  async function instance(): Promise<{ status: string; instanceType: { id: string }; failure?: string | null }> {
    const found = await request('GET', `${D}/compute/${instanceId}`, { token });
    expect(found.status, found.text).to.equal(200);
    return found.body;
  }

  async function converges(status: string, typeId?: string) {
    return eventually(async () => {
      const current = await instance();
      if (current.status === 'FAILED') throw new Error(`FAILED: ${current.failure}`);
      return current.status === status && (!typeId || current.instanceType.id === typeId) ? current : undefined;
    }, 90_000, `${status} after the restart`);
  }

  /** A superuser URL of the database where the control plane says it is now. */
  async function whereItIs(): Promise<{ url: string; onInstance: boolean }> {
    const [row] = await query<{ physical_name: string; server_port: number | null }>(controlPlane.url, 'select physical_name, server_port from databases where id = $1', [databaseId]);
    if (row.server_port === null) return { url: databaseUrl(p.postgres.adminUrl, row.physical_name), onInstance: false };
    const password = readFileSync(join(computeDir, instanceId, 'password'), 'utf8').trim();
    return { url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${row.server_port}/${row.physical_name}`, onInstance: true };
  }

  async function rows(): Promise<string[]> {
    const { url } = await whereItIs();
    return (await query<{ body: string }>(url, 'select body from crash_notes order by id')).map((row) => row.body);
  }

  async function write(body: string): Promise<void> {
    const { url } = await whereItIs();
    await query(url, 'insert into crash_notes (body) values ($1)', [body]);
  }

  /** Kills the platform at `faultPoint` while `act` runs, then starts it again. */
  async function crashAt(faultPoint: string, act: () => Promise<void>): Promise<void> {
    await running[running.length - 1]?.stop();
    const doomed = await start(faultPoint);
    await act();
    expect(await doomed.exited).to.equal('SIGKILL');
    await start();
  }

  it('sets up a READY database with rows', async function () {
    await start();
    expect((await request('POST', '/workspaces', { token, json: { name: 'Crash', slug: 'crash-compute' } })).status).to.equal(201);
    const created = await request('POST', '/workspaces/crash-compute/databases', { token, json: { databaseName: 'survivor', region: 'AWS_US_WEST_2' } });
    expect(created.status, created.text).to.equal(201);
    databaseId = created.body.id;
    await eventually(async () => ((await request('GET', D, { token })).body.status === 'READY' ? true : undefined), 30_000, 'READY');
    const { url } = await whereItIs();
    await query(url, 'create table crash_notes (id serial primary key, body text not null)');
    await write('before');
  });

  it('PROVISIONING: killed after the copy, before the switch was committed, it moves again and converges to READY', async function () {
    await crashAt('compute_provisioning_after_move', async () => {
      const created = await request('POST', `${D}/compute`, { token, json: { instanceName: 'crashy', instanceSize: 'small' } });
      expect(created.status, created.text).to.equal(201);
      instanceId = created.body.instanceId;
    });
    await converges('READY');
    expect((await whereItIs()).onInstance).to.equal(true);
    expect(await rows()).to.deep.equal(['before']);
    await write('on the instance');
    // One server for the instance: the killed run's went with it.
    expect(processesUsing(join(computeDir, instanceId))).to.have.length(1);
  });

  it('RESIZING: killed before the restart, it resizes on start and converges to READY with the new type', async function () {
    await crashAt('compute_resizing_before_restart', async () => {
      const changed = await request('PUT', `${D}/compute/${instanceId}`, { token, json: { instanceSize: 'medium' } });
      expect(changed.status, changed.text).to.equal(200);
    });
    await converges('READY', 'ct_medium');
    const { url } = await whereItIs();
    expect((await query<{ shared_buffers: string }>(url, 'show shared_buffers'))[0].shared_buffers).to.equal('512MB');
    expect(await rows()).to.deep.equal(['before', 'on the instance']);
    await write('after the resize');
    expect(processesUsing(join(computeDir, instanceId))).to.have.length(1);
  });

  it('READY: killed with nothing under way, the instance’s server is started again when the platform starts', async function () {
    const app = running[running.length - 1];
    app.child.kill('SIGKILL');
    await app.exited;
    // The watchdog stops the server of a platform that died.
    await eventually(async () => (processesUsing(join(computeDir, instanceId)).length === 0 ? true : undefined), 20_000, 'the old server gone');
    await start();
    await eventually(async () => (processesUsing(join(computeDir, instanceId)).length === 1 ? true : undefined), 30_000, 'the server started again');
    expect(await eventually(async () => rows().catch(() => undefined), 30_000, 'rows readable')).to.deep.equal(['before', 'on the instance', 'after the resize']);
  });

  it('DELETING: killed after the copy back, before the switch was committed, it converges to TERMINATED with nothing left', async function () {
    await crashAt('compute_deleting_after_move', async () => {
      const deleting = await request('DELETE', `${D}/compute/${instanceId}`, { token });
      expect(deleting.status, deleting.text).to.equal(200);
    });
    await converges('TERMINATED');
    expect((await whereItIs()).onInstance).to.equal(false);
    expect(await rows()).to.deep.equal(['before', 'on the instance', 'after the resize']);
    expect(processesUsing(join(computeDir, instanceId))).to.deep.equal([]);
    expect(existsSync(join(computeDir, instanceId))).to.equal(false);
  });

  it('FAILED: a driver that keeps failing gives up with the reason, leaves the database where it was and working; the instance can be deleted', async function () {
    await running[running.length - 1].stop();
    const broken = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env: { ...env, PG_CLIENT_BIN: join(computeDir, 'no-tools-here') } });
    running.push(broken);
    const created = await request('POST', `${D}/compute`, { token, json: { instanceName: 'doomed', instanceSize: 'small' } });
    expect(created.status, created.text).to.equal(201);
    instanceId = created.body.instanceId;
    const failed = await eventually(async () => {
      const current = await instance();
      return current.status === 'FAILED' ? current : undefined;
    }, 60_000, 'FAILED');
    expect(failed.failure).to.match(/^provisioning failed: .*pg_dump/);
    // The database stayed on its cluster, its pause lifted (superusers pass a pause; everyone else
    // needs the limit back): the one it had, DATABASE_MAX_CONNECTIONS by default.
    expect((await whereItIs()).onInstance).to.equal(false);
    const [{ physical_name: physical }] = await query<{ physical_name: string }>(controlPlane.url, 'select physical_name from databases where id = $1', [databaseId]);
    const [limit] = await query<{ datconnlimit: number }>(p.postgres.adminUrl, 'select datconnlimit from pg_database where datname = $1', [physical]);
    expect(limit.datconnlimit).to.equal(100);
    await write('after the failure');
    expect(await rows()).to.deep.equal(['before', 'on the instance', 'after the resize', 'after the failure']);
    const deleting = await request('DELETE', `${D}/compute/${instanceId}`, { token });
    expect(deleting.status, deleting.text).to.equal(200);
    await converges('TERMINATED');
    expect(existsSync(join(computeDir, instanceId))).to.equal(false);
    expect(processesUsing(join(computeDir, instanceId))).to.deep.equal([]);
  });
});
