import { expect } from 'chai';
import { ClientChangeListener } from './client-change-listener.js';
import { eventually, query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';

describe('ClientChangeListener', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let listener: ClientChangeListener | null = null;

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
  });

  after(async function () {
    await listener?.stop();
    await controlPlane?.close();
    await server?.stop();
  });

  it('hears every committed change of a client, and reconnects (saying so) when its connection is killed', async function () {
    const changed: string[] = [];
    const lost: unknown[] = [];
    listener = new ClientChangeListener(controlPlane.url, { changed: (id) => changed.push(id), lost: (error) => lost.push(error) }, 100);
    await listener.start();

    const [workspace] = await query<{ id: string }>(
      controlPlane.url,
      `insert into workspaces (id, name, slug, created) values (gen_random_uuid(), 'W', 'w-notify', now()) returning id`,
    );
    await query(controlPlane.url, `insert into oauth_clients (id, workspace_id, name, type, secret_digest, created) values ('cli_n1', $1, 'n', 'confidential', 'd1', now())`, [workspace.id]);
    await query(controlPlane.url, `update oauth_clients set secret_digest = 'd2' where id = 'cli_n1'`);
    // A rolled-back change is never announced.
    await query(controlPlane.url, `do $$ begin update oauth_clients set secret_digest = 'd3' where id = 'cli_n1'; raise exception 'rolled back'; end $$`).catch(() => undefined);
    await eventually(async () => (changed.length >= 2 ? true : undefined), 5_000, 'two notifications');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(changed).to.deep.equal(['cli_n1', 'cli_n1']);

    await query(controlPlane.url, `select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'oauth client-change listener'`);
    await eventually(async () => (lost.length > 0 ? true : undefined), 5_000, 'the loss to be reported');
    // Once reconnected, changes are heard again.
    await eventually(
      async () => {
        await query(controlPlane.url, `update oauth_clients set deleted = now() where id = 'cli_n1'`);
        return changed.length > 2 ? true : undefined;
      },
      10_000,
      'a notification after reconnecting',
    );
  });
});
