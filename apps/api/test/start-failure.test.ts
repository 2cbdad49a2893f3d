import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { openRepositories } from '@platform/persistence';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { databaseExists, query, rejection, scratchDir, startTestPostgres, type TestPostgres } from '@platform/testing';
import { startApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';

describe('API: a start that fails', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let cp: TestControlPlane;
  let taken: net.Server;
  let computeDir: string;

  before(async function () {
    postgres = await startTestPostgres();
    cp = await createTestControlPlane(postgres, { issuer: 'http://oauth.test', audience: 'http://api.test' });
    taken = net.createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    computeDir = scratchDir('start-failure-compute-');
  });

  after(async function () {
    taken?.close();
    await cp?.close();
    await postgres?.stop();
    if (computeDir) rmSync(computeDir, { recursive: true, force: true });
  });

  it('runs no reconciler pass when its port is taken: a requested database stays requested', async function () {
    const developer = await cp.newDeveloper();
    const repositories = openRepositories(cp.orm);
    const workspace = await repositories.workspaces.create({ name: 'Never started', slug: `ns-${randomBytes(4).toString('hex')}`, ownerId: developer.id });
    const database = await repositories.databases.create({ id: randomUUID(), workspace, name: `db_${randomBytes(4).toString('hex')}`, region: 'AWS_US_WEST_2' });
    const port = (taken.address() as net.AddressInfo).port;
    const config = loadApiConfig({
      ...cp.env,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      PUBLIC_BASE_URL: 'http://api.test',
      OAUTH_ISSUER: 'http://oauth.test',
      PLATFORM_REGIONS: 'AWS_US_WEST_2',
      LOG_LEVEL: 'silent',
      RECONCILE_INTERVAL_MS: '100',
      COMPUTE_DIR: computeDir,
      COMPUTE_RECONCILE_MS: '100',
    });

    const error = await rejection(startApi(config));
    expect(error.code).to.equal('EADDRINUSE');
    // Had the loops started, their first pass would have run before the failed start closed them.
    const [row] = await query<{ status: string; attempts: number }>(cp.url, 'select status, attempts from databases where id = $1', [database.id]);
    expect(row).to.deep.equal({ status: 'REQUESTED', attempts: 0 });
    expect(await databaseExists(postgres.adminUrl, database.physicalName)).to.equal(false);
  });
});
