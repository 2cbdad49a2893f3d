import { expect } from 'chai';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { developerWithWorkspace, expectApiError, uniqueDatabaseName, type TestControlPlane } from '@platform/test-fixtures';
import type { EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { eventually, httpClient, query, scratchDir } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { requirePgbackrest, startBackedUpCluster } from './support/backed-up-cluster.js';

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

interface BackupHealth {
  servers: string[];
  archiving: string;
  managed: boolean;
  restorableFrom: string | null;
  lastBackup: { type: string } | null;
}

/**
 * Dedicated compute instances' servers archive their WAL and are backed up into the platform's
 * repository (BACKUP_DIR), and a database that lives on one is restored to a point in time and
 * branched from them; on a platform of this file's own (the other files' servers are not backed up).
 */
describe('backups of dedicated compute instances', function () {
  this.timeout(300_000);
  const dir = scratchDir('platform-compute-backups-');
  const repoDir = join(dir, 'repo');
  let cluster: EmbeddedPostgresHandle;
  let controlPlane: TestControlPlane;
  let api: RunningApi;
  let request: ReturnType<typeof httpClient>;

  before(async function () {
    requirePgbackrest(this);
    const backedUp = await startBackedUpCluster(dir, { stanza: 'platform', repoDir });
    ({ server: cluster, controlPlane } = backedUp);
    const env = {
      ...backedUp.env,
      RECONCILE_INTERVAL_MS: '200',
      COMPUTE_DIR: join(dir, 'compute'),
      COMPUTE_RECONCILE_MS: '200',
      BACKUP_DIR: repoDir,
    };
    api = await startApi(loadApiConfig(env), { logger: pino({ level: 'error' }) });
    request = httpClient(api.url);
    await eventually(async () => ((await backupHealth()).find((entry) => entry.servers.includes('AWS_US_WEST_2'))?.restorableFrom ? true : undefined), 90_000, 'the cluster’s first base backup');
  });

  after(async function () {
    await api?.close();
    await controlPlane?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function backupHealth(): Promise<BackupHealth[]> {
    const ready = await request('GET', '/readyz');
    expect(ready.status, ready.text).to.equal(200);
    return ready.body.backups;
  }

  const labels = async (url: string) => (await query<{ label: string }>(url, 'select label from marks order by label')).map((row) => row.label);

  async function waitReady(token: string, D: string) {
    return eventually(async () => {
      const found = await request('GET', D, { token });
      return found.body?.status === 'READY' ? found.body : undefined;
    }, 180_000, `${D} to be READY`);
  }

  async function instanceStatus(token: string, D: string, id: string, status: string) {
    return eventually(async () => {
      const found = await request('GET', `${D}/compute/${id}`, { token });
      if (found.body?.status === 'FAILED') throw new Error(`instance FAILED: ${found.body.failure}`);
      return found.body?.status === status ? found.body : undefined;
    }, 120_000, `instance ${id} ${status}`);
  }

  /** Where the database is served now, as the control plane says: its URL for a credential there. */
  async function credentialUrl(databaseId: string, credential: { id: string; password: string }): Promise<string> {
    const [row] = await query<{ physical_name: string; server_host: string | null; server_port: number | null }>(
      controlPlane.url,
      'select physical_name, server_host, server_port from databases where id = $1',
      [databaseId],
    );
    const url = new URL(cluster.url(row.physical_name));
    if (row.server_host) {
      url.hostname = row.server_host;
      url.port = String(row.server_port);
    }
    url.username = credential.id;
    url.password = encodeURIComponent(credential.password);
    return url.href;
  }

  /** A READY database moved onto a dedicated compute instance, with rows t1, t2, t3 committed there a moment apart. */
  async function sourceOnCompute() {
    const owner = await developerWithWorkspace({ controlPlane, request });
    const name = uniqueDatabaseName('oncompute');
    const D = `/workspaces/${owner.slug}/databases/${name}`;
    const created = await request('POST', `/workspaces/${owner.slug}/databases`, { token: owner.token, json: { databaseName: name, region: 'AWS_US_WEST_2' } });
    expect(created.status, created.text).to.equal(201);
    const source = await waitReady(owner.token, D);
    const credential = await request('POST', `${D}/credentials`, { token: owner.token });
    expect(credential.status, credential.text).to.equal(201);
    await query(await credentialUrl(source.id, credential.body), `create table marks (label text primary key)`);
    await query(await credentialUrl(source.id, credential.body), `insert into marks values ('before the move')`);
    const beforeMove = new Date();
    await sleep(300);
    const instance = await request('POST', `${D}/compute`, { token: owner.token, json: { instanceName: 'primary', instanceSize: 'small' } });
    expect(instance.status, instance.text).to.equal(201);
    await instanceStatus(owner.token, D, instance.body.instanceId, 'READY');
    const url = await credentialUrl(source.id, credential.body);
    expect(new URL(url).port, 'served by its instance’s server').not.to.equal(new URL(cluster.url('postgres')).port);
    await query(url, `insert into marks values ('t1')`);
    await sleep(300);
    await query(url, `insert into marks values ('t2')`);
    await sleep(300);
    const [{ now: between }] = await query<{ now: Date }>(url, 'select clock_timestamp() as now');
    await sleep(300);
    await query(url, `insert into marks values ('t3')`);
    return { ...owner, name, D, source, url, beforeMove, between, instanceId: instance.body.instanceId as string };
  }

  async function copyOf(src: { slug: string; token: string; name: string }, from: { at?: Date }) {
    const name = uniqueDatabaseName('copy');
    const created = await request('POST', `/workspaces/${src.slug}/databases`, {
      token: src.token,
      json: { databaseName: name, from: { database: src.name, ...(from.at ? { at: from.at.toISOString() } : {}) } },
    });
    expect(created.status, created.text).to.equal(201);
    const D = `/workspaces/${src.slug}/databases/${name}`;
    const copy = await waitReady(src.token, D);
    const credential = await request('POST', `${D}/credentials`, { token: src.token });
    expect(credential.status, credential.text).to.equal(201);
    return { copy, url: await credentialUrl(copy.id, credential.body) };
  }

  it('archives and backs up an instance’s server from its start, and restores and branches a database served there', async function () {
    const src = await sourceOnCompute();
    const health = await eventually(async () => {
      const entry = (await backupHealth()).find((item) => item.servers.includes(`compute instance ${src.instanceId}`));
      return entry?.restorableFrom ? entry : undefined;
    }, 60_000, 'the instance’s server in /readyz with a restorable window');
    expect(health).to.deep.include({ archiving: 'ok', managed: true });
    expect(health.lastBackup?.type).to.equal('full');
    expect(readdirSync(join(repoDir, 'backup'))).to.include(`compute-${src.instanceId}`);

    const restored = await copyOf(src, { at: src.between });
    expect(restored.copy.source).to.deep.equal({ id: src.source.id, at: src.between.toISOString() });
    expect(await labels(restored.url), 'a restore between t2 and t3').to.deep.equal(['before the move', 't1', 't2']);
    expect(new URL(restored.url).port, 'the copy is on its region’s cluster').to.equal(new URL(cluster.url('postgres')).port);

    const branch = await copyOf(src, {});
    expect(await labels(branch.url), 'a branch').to.deep.equal(['before the move', 't1', 't2', 't3']);
    expect(await labels(src.url), 'the source, unchanged and served').to.deep.equal(['before the move', 't1', 't2', 't3']);
    expect(readdirSync(join(dir, 'compute', 'restores'))).to.deep.equal([]);
  });

  it('reaches no further back than the move onto the instance, and forgets the instance’s backups once it is deleted', async function () {
    const src = await sourceOnCompute();
    const early = await request('POST', `/workspaces/${src.slug}/databases`, {
      token: src.token,
      json: { databaseName: uniqueDatabaseName('early'), from: { database: src.name, at: src.beforeMove.toISOString() } },
    });
    expectApiError(early, 400, 'restore_point_outside_window');
    expect(early.body.message).to.match(/can be restored from \S+ to now/);
    const from = new Date(/can be restored from (\S+) to now/.exec(early.body.message)![1]);
    expect(from.getTime(), 'the window opens when the move committed').to.be.greaterThan(src.beforeMove.getTime());

    const removed = await request('DELETE', `${src.D}/compute/${src.instanceId}`, { token: src.token });
    expect(removed.status, removed.text).to.equal(200);
    await instanceStatus(src.token, src.D, src.instanceId, 'TERMINATED');
    for (const folder of ['backup', 'archive']) {
      expect(readdirSync(join(repoDir, folder)), `the repository's ${folder} folder`).not.to.include(`compute-${src.instanceId}`);
    }
    // Back on its cluster: the instance's instants are gone with its backups; from the move back on, it is restorable.
    const [{ served_since: movedBack }] = await query<{ served_since: Date }>(controlPlane.url, 'select served_since from databases where id = $1', [src.source.id]);
    expect(movedBack.getTime()).to.be.greaterThan(src.between.getTime());
    const onInstance = await request('POST', `/workspaces/${src.slug}/databases`, {
      token: src.token,
      json: { databaseName: uniqueDatabaseName('gone'), from: { database: src.name, at: src.between.toISOString() } },
    });
    expectApiError(onInstance, 400, 'restore_point_outside_window');
    const branch = await copyOf(src, {});
    expect(await labels(branch.url)).to.deep.equal(['before the move', 't1', 't2', 't3']);
  });
});
