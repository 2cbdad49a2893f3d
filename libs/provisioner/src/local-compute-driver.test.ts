import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_COMPUTE_TYPES } from '@platform/domain';
import { scratchDir } from '@platform/postgres-launcher';
import { requirePgvector } from '@platform/testing';
import { LocalComputeDriver } from './local-compute-driver.js';

const [SMALL, MEDIUM] = DEFAULT_COMPUTE_TYPES;

async function setting(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query(`select current_setting($1) as value`, [name])).rows[0].value;
  } finally {
    await client.end();
  }
}

describe('LocalComputeDriver', function () {
  this.timeout(120_000);
  const dir = scratchDir('platform-compute-driver-');
  const id = randomUUID();
  // Two replicas of the platform on one machine, sharing the folder.
  const first = new LocalComputeDriver({ dir });
  const second = new LocalComputeDriver({ dir });

  after(async function () {
    this.timeout(60_000);
    await first.close();
    await second.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts a server with the type’s settings, and reaches it from any replica on the machine', async function () {
    const server = await first.ensureRunning(id, SMALL);
    expect(await setting(server.adminUrl, 'shared_buffers')).to.equal('256MB');
    expect(await setting(server.adminUrl, 'max_connections')).to.equal('100');
    expect(first.running(id)).to.deep.equal(server);
    expect(await first.ensureRunning(id, SMALL), 'already running: the same server').to.deep.equal(server);
    expect(second.running(id)).to.equal(null);
    expect(second.adminUrl(id)).to.equal(server.adminUrl);
    expect(await second.stored()).to.deep.equal([id]);
  });

  it('restarts with another type on the same port; a replica whose server was taken over lets it go', async function () {
    const before = first.running(id)!;
    const server = await second.restart(id, MEDIUM);
    expect(server.address).to.deep.equal(before.address);
    expect(await setting(server.adminUrl, 'shared_buffers')).to.equal('512MB');
    for (let waited = 0; first.running(id) !== null && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(first.running(id)).to.equal(null);
  });

  it('removes the server and its folder, from whichever replica', async function () {
    await first.remove(id);
    expect(existsSync(join(dir, id))).to.equal(false);
    expect(await first.stored()).to.deep.equal([]);
    expect(first.adminUrl(id)).to.equal(null);
    for (let waited = 0; second.running(id) !== null && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(second.running(id)).to.equal(null);
  });

  it('refuses an id that is not a UUID before touching the disk', async function () {
    for (const bad of ['../etc', '', 'x/y']) expect(() => first.adminUrl(bad)).to.throw(/not an instance id/);
  });
});

describe('LocalComputeDriver with an extensions folder (PG_EXTENSIONS_DIR)', function () {
  this.timeout(120_000);
  const dir = scratchDir('platform-compute-extensions-');
  let driver: LocalComputeDriver;

  after(async function () {
    this.timeout(60_000);
    await driver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives each instance’s server, in a data folder of its own, pgvector to create', async function () {
    // Skipped outside CI only when pgvector is not fetched yet (requirePgvector prints why; under CI it fails).
    const extensionsDir = requirePgvector(() => this.skip());
    driver = new LocalComputeDriver({ dir, extensionsDir });
    const id = randomUUID();
    const server = await driver.ensureRunning(id, SMALL);
    expect(await setting(server.adminUrl, 'data_directory')).to.equal(join(dir, id, 'data'));
    const client = new pg.Client({ connectionString: server.adminUrl });
    await client.connect();
    try {
      await client.query('create extension vector');
      expect((await client.query("select '[1,2,3]'::vector <-> '[1,2,5]' as distance")).rows).to.deep.equal([{ distance: 2 }]);
    } finally {
      await client.end();
    }
  });
});
