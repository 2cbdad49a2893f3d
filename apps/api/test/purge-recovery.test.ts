import { expect } from 'chai';
import { databaseExists, eventually, freePort, httpClient, query } from '@platform/testing';
import { createTestControlPlane, startAppProcess, waitForStatus, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

describe('a purge killed half-way', function () {
  this.timeout(120_000);
  let p: TestPlatform;
  let controlPlane: TestControlPlane;
  const running: AppProcess[] = [];

  before(async function () {
    p = await platform();
    // A control plane of its own: no other provisioner may finish the work for the restarted one.
    controlPlane = await createTestControlPlane(p.postgres, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
  });

  after(async function () {
    for (const { child } of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await controlPlane.close();
  });

  async function row(id: string) {
    const [found] = await query<{ physical_name: string; deleted: Date | null; dropped: Date | null }>(
      controlPlane.url,
      'select physical_name, deleted, dropped from databases where id = $1',
      [id],
    );
    return found;
  }

  for (const [step, dropped] of [
    ['before_drop_database', false],
    ['after_drop_database', true],
  ] as const) {
    it(`converges on restart when killed ${step.replace(/_/g, ' ')}: no PostgreSQL database and no role left, not restorable`, async function () {
      // The API as its own process, as `npm start` runs it, so that it can really die; restarted on the same port.
      const port = await freePort();
      const env = { ...controlPlane.env, PUBLIC_BASE_URL: TEST_AUDIENCE, OAUTH_ISSUER: TEST_ISSUER, LOG_LEVEL: 'error', RECONCILE_INTERVAL_MS: '200' };
      const request = httpClient(`http://127.0.0.1:${port}`);
      const api = { controlPlane, request };
      const { token } = await controlPlane.newDeveloper();
      const slug = `purge-${step.replace(/_/g, '-')}`;

      const doomed = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env: { ...env, PLATFORM_FAULT_POINT: step } });
      running.push(doomed);
      expect((await request('POST', '/workspaces', { token, json: { name: 'Purge', slug } })).status).to.equal(201);
      expect((await request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: 'doomed', region: 'AWS_US_WEST_2' } })).status).to.equal(201);
      const ready = await waitForStatus(api, token, slug, 'doomed', 'READY');
      const credential = await request('POST', `/workspaces/${slug}/databases/doomed/credentials`, { token });
      expect(credential.status, credential.text).to.equal(201);
      expect((await request('DELETE', `/workspaces/${slug}/databases/doomed`, { token })).status).to.equal(200);
      const { physical_name: physicalName } = await row(ready.id);

      // The purge's drop kills the process mid-request: the client sees the connection go.
      const purge = await request('POST', `/workspaces/${slug}/databases/${ready.id}/purge`, { token }).catch((error: Error) => error);
      expect(purge).to.be.instanceOf(Error);
      expect(await doomed.exited).to.equal('SIGKILL');
      expect(await databaseExists(p.postgres.adminUrl, physicalName)).to.equal(!dropped);
      expect((await row(ready.id)).dropped).to.equal(null);

      const restarted = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env });
      running.push(restarted);
      // Its retention ended with the purge: never restorable again, whatever the reconciler has done yet.
      const restore = await request('POST', `/workspaces/${slug}/databases/${ready.id}/restore`, { token });
      expect(restore.status, restore.text).to.equal(404);
      await eventually(async () => ((await row(ready.id)).dropped ? true : undefined), 30_000, 'the drop to be recorded after restart');
      expect(await databaseExists(p.postgres.adminUrl, physicalName)).to.equal(false);
      expect(await query(p.postgres.adminUrl, 'select rolname from pg_roles where starts_with(rolname, $1) or rolname = $2', [physicalName, credential.body.id])).to.deep.equal([]);
      expect((await request('GET', `/workspaces/${slug}/databases?deleted=true`, { token })).body).to.deep.equal([]);

      restarted.child.kill('SIGTERM');
      expect(await restarted.exited).to.equal(0);
    });
  }
});
