import { expect } from 'chai';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { ensureFirstPartyClient } from './first-party-clients.js';

describe('ensureFirstPartyClient', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  const clientRow = async (id: string) =>
    query<{ workspace_id: string | null; name: string; type: string; secret_digest: string | null; redirect_uris: string[] }>(
      controlPlane.url,
      'select workspace_id, name, type, secret_digest, redirect_uris from oauth_clients where id = $1',
      [id],
    );

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  it('creates a public client of no workspace, puts a new redirect URI in place of the old one, and writes nothing when it has it', async function () {
    const client = { id: 'platform-console', name: 'Platform web console' };
    expect(await ensureFirstPartyClient(controlPlane.orm, { ...client, redirectUri: 'http://127.0.0.1:4100/console' })).to.equal(true);
    expect(await ensureFirstPartyClient(controlPlane.orm, { ...client, redirectUri: 'https://api.example.com/console' })).to.equal(true);
    expect(await ensureFirstPartyClient(controlPlane.orm, { ...client, redirectUri: 'https://api.example.com/console' })).to.equal(false);
    // The old address receives no more codes.
    expect(await clientRow('platform-console')).to.deep.equal([
      { workspace_id: null, name: 'Platform web console', type: 'public', secret_digest: null, redirect_uris: ['https://api.example.com/console'] },
    ]);
  });

  it('leaves a client of a workspace under that id alone', async function () {
    const [{ id: workspaceId }] = await query<{ id: string }>(controlPlane.url, `insert into workspaces (id, name, slug, created) values (gen_random_uuid(), 'W', 'w-first-party', now()) returning id`);
    await query(controlPlane.url, `insert into oauth_clients (id, workspace_id, name, type, redirect_uris, created) values ('taken', $1, 'Theirs', 'public', '[]', now())`, [workspaceId]);
    expect(await ensureFirstPartyClient(controlPlane.orm, { id: 'taken', name: 'Ours', redirectUri: 'http://127.0.0.1:4100/console' })).to.equal(false);
    expect(await clientRow('taken')).to.deep.equal([{ workspace_id: workspaceId, name: 'Theirs', type: 'public', secret_digest: null, redirect_uris: [] }]);
  });
});
