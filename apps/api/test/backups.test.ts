import { expect } from 'chai';
import { chmodSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { TestControlPlane } from '@platform/test-fixtures';
import type { EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { eventually, httpClient, query, scratchDir } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { requirePgbackrest, startBackedUpCluster } from './support/backed-up-cluster.js';
import { SERVED_REGIONS } from './support/platform.js';

/** Every folder of the repository writable by its owner (the server's account) or not: a full or broken backup disk. */
function setRepositoryWritable(dir: string, writable: boolean): void {
  const folders = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isDirectory());
  for (const path of [dir, ...folders.map((entry) => join(entry.parentPath, entry.name))]) {
    const mode = statSync(path).mode & 0o7777;
    chmodSync(path, writable ? mode | 0o200 : mode & ~0o200);
  }
}

/**
 * The API's side of backups, on a cluster of this file's own that archives its WAL (the other
 * files' servers do not): the base backup job, claimed so that two replicas never back up at once,
 * and archiving failures in readiness and the log, the server serving on.
 */
describe('backups of the platform’s cluster (pgBackRest)', function () {
  this.timeout(180_000);
  const dir = scratchDir('platform-backups-pg-');
  const repoDir = join(dir, 'repo');
  const logged: string[] = [];
  let server: EmbeddedPostgresHandle;
  let controlPlane: TestControlPlane;
  const apis: RunningApi[] = [];

  before(async function () {
    requirePgbackrest(this);
    const backedUp = await startBackedUpCluster(dir, { stanza: 'api-test', repoDir });
    ({ server, controlPlane } = backedUp);
    const env = { ...backedUp.env, COMPUTE_TYPES: '[]' };
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    // Two replicas of the API on the same cluster.
    for (let i = 0; i < 2; i++) apis.push(await startApi(loadApiConfig(env), { logger: pino({ level: 'info' }, sink) }));
  });

  after(async function () {
    for (const api of apis) await api.close();
    await controlPlane?.close();
    await server?.stop();
    if (existsSync(repoDir)) setRepositoryWritable(repoDir, true);
    rmSync(dir, { recursive: true, force: true });
  });

  const readiness = async (api: RunningApi) => {
    const ready = await httpClient(api.url)('GET', '/readyz');
    expect(ready.status, ready.text).to.equal(200);
    expect(ready.body.backups).to.have.length(1);
    return ready.body.backups[0];
  };

  it('takes the first full backup once, whichever replica claims it, and reports it in readiness', async function () {
    const reported = await eventually(async () => {
      const backups = await readiness(apis[0]);
      return backups.lastBackup && backups.restorableFrom ? backups : undefined;
    }, 60_000, 'a base backup to be reported');
    expect(reported).to.deep.include({ servers: ['control plane', ...SERVED_REGIONS], archiving: 'ok', managed: true, walGap: false });
    expect(reported.lastBackup.type).to.equal('full');
    expect(Date.parse(reported.restorableFrom)).to.equal(Date.parse(reported.lastBackup.finishedAt) + 1000);
    expect(reported.failedCount).to.equal(0);
    // Both replicas look at the same stanza; one backed up while the other found it claimed, or done.
    await eventually(async () => ((await readiness(apis[1])).lastBackup ? true : undefined), 30_000, 'the other replica to see the backup');
    expect(server.backups).to.not.equal(null);
    const kept = await server.backups!.list();
    expect(kept.map((backup) => backup.type)).to.deep.equal(['full']);
    expect(logged.filter((line) => line.includes('"base backup done"'))).to.have.length(1);
  });

  it('reports archiving failing while the repository refuses writes, logs it, serves on, and reports the recovery', async function () {
    setRepositoryWritable(repoDir, false);
    try {
      await query(server.url('postgres'), 'select pg_switch_wal()');
      await query(controlPlane.url, 'create table if not exists backups_test_filler (n int); insert into backups_test_filler values (1)');
      await query(server.url('postgres'), 'select pg_switch_wal()');
      const failing = await eventually(async () => {
        const backups = await readiness(apis[0]);
        return backups.archiving === 'failing' ? backups : undefined;
      }, 30_000, 'readiness to report archiving failing');
      expect(failing.failedCount).to.be.greaterThan(0);
      expect(Date.parse(failing.lastFailedAt)).to.be.greaterThan(Date.parse(failing.lastArchivedAt));
      await eventually(async () => (logged.some((line) => line.includes('WAL archiving of a PostgreSQL server is failing')) ? true : undefined), 10_000, 'the failure in the log');
      const developer = await controlPlane.newDeveloper();
      expect((await httpClient(apis[0].url)('GET', '/workspaces', { token: developer.token })).status).to.equal(200);
    } finally {
      setRepositoryWritable(repoDir, true);
    }
    await query(controlPlane.url, 'insert into backups_test_filler values (2)');
    await query(server.url('postgres'), 'select pg_switch_wal()');
    await eventually(async () => ((await readiness(apis[0])).archiving === 'ok' ? true : undefined), 30_000, 'archiving to recover');
    await eventually(async () => (logged.some((line) => line.includes('WAL archiving of a PostgreSQL server works again')) ? true : undefined), 10_000, 'the recovery in the log');
  });
});
