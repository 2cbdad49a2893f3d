import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlAuthSettings } from './auth-settings.store.js';

describe('SqlAuthSettings', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let store: SqlAuthSettings;
  let workspaceId: string;

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    store = new SqlAuthSettings(controlPlane.orm);
    [{ id: workspaceId }] = await query<{ id: string }>(controlPlane.url, `insert into workspaces (id, name, slug, created) values (gen_random_uuid(), 'W', 'w-auth-settings', now()) returning id`);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  async function newDatabase(): Promise<string> {
    const id = randomUUID();
    await query(
      controlPlane.url,
      `insert into databases (id, workspace_id, name, region, status, physical_name, created, updated) values ($1, $2, $3, 'AWS_US_WEST_2', 'READY', $3, now(), now())`,
      [id, workspaceId, `db_${id.replaceAll('-', '')}`],
    );
    return id;
  }

  it('writes the fields given and keeps the others, answering true', async function () {
    const id = await newDatabase();
    expect(await store.update(id, { appOrigins: ['https://app.example.com'] })).to.equal(true);
    expect(await store.update(id, { selfSignUp: true })).to.equal(true);
    expect(await store.find(id)).to.deep.equal({ selfSignUp: true, appOrigins: ['https://app.example.com'] });
  });

  it('answers false and writes nothing for a database whose row is gone (purged after the caller found it), instead of a foreign key error', async function () {
    const id = await newDatabase();
    await query(controlPlane.url, 'delete from databases where id = $1', [id]);
    expect(await store.update(id, { selfSignUp: true, appOrigins: ['https://app.example.com'] })).to.equal(false);
    expect(await store.update(id, { selfSignUp: false })).to.equal(false);
    expect(await store.find(id)).to.equal(null);
    expect(await query(controlPlane.url, 'select count(*)::int as n from database_auth_settings where database_id = $1', [id])).to.deep.equal([{ n: 0 }]);
  });
});
