import { expect } from 'chai';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { databaseExists, eventually, freePort, httpClient } from '@platform/testing';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { BUILT_IN_SCHEMA_STEPS } from '@platform/data-plane';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

async function controlPlaneRow(url: string, id: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('select status, deleted, dropped, physical_name from databases where id = $1', [id])).rows[0];
  } finally {
    await client.end();
  }
}

describe('provisioning after a crash', function () {
  this.timeout(90_000);
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

  it('converges to READY with one PostgreSQL database when killed between CREATE DATABASE and the status write', async function () {
    // The API as its own process, as `npm start` runs it, so that it can really die; restarted on the same port.
    const port = await freePort();
    const env = {
      ...controlPlane.env,
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      OAUTH_ISSUER: TEST_ISSUER,
      LOG_LEVEL: 'error',
      RECONCILE_INTERVAL_MS: '200',
    };
    const request = httpClient(`http://127.0.0.1:${port}`);
    const { token } = await controlPlane.newDeveloper();

    const doomed = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env: { ...env, PLATFORM_FAULT_POINT: 'after_create_database' } });
    running.push(doomed);
    expect((await request('POST', '/workspaces', { token, json: { name: 'Crash', slug: 'crash-test' } })).status).to.equal(201);
    const created = await request('POST', '/workspaces/crash-test/databases', { token, json: { databaseName: 'survivor', region: 'AWS_US_WEST_2' } });
    expect(created.status).to.equal(201);
    expect(await doomed.exited).to.equal('SIGKILL');

    // The crash left the database created but its status unwritten.
    const { physical_name: physicalName } = await controlPlaneRow(controlPlane.url, created.body.id);
    expect(await databaseExists(p.postgres.adminUrl, physicalName)).to.equal(true);
    expect((await controlPlaneRow(controlPlane.url, created.body.id)).status).to.equal('REQUESTED');

    const restarted = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', port, env });
    running.push(restarted);
    const ready = await eventually(async () => {
      const found = await request('GET', '/workspaces/crash-test/databases/survivor', { token });
      return found.body?.status === 'READY' ? found.body : undefined;
    }, 30_000, 'READY after restart');
    expect(ready.id).to.equal(created.body.id);
    expect(ready.dbHost).to.equal(created.body.dbHost);

    // Exactly one PostgreSQL database for it, with its built-in schema installed once.
    const cluster = new pg.Client({ connectionString: p.postgres.adminUrl });
    await cluster.connect();
    try {
      const matching = await cluster.query(`select datname from pg_database where datname like $1`, [`%${physicalName.slice(3)}%`]);
      expect(matching.rows.map((row) => row.datname)).to.deep.equal([physicalName]);
    } finally {
      await cluster.end();
    }
    const inside = new pg.Client({ connectionString: databaseUrl(p.postgres.adminUrl, physicalName) });
    await inside.connect();
    try {
      const steps = (await inside.query('select version from platform.schema_steps order by version')).rows;
      expect(steps).to.deep.equal(BUILT_IN_SCHEMA_STEPS.map(({ version }) => ({ version })));
    } finally {
      await inside.end();
    }

    // Graceful stop: SIGTERM drains and exits 0.
    restarted.child.kill('SIGTERM');
    expect(await restarted.exited).to.equal(0);
  });
});
