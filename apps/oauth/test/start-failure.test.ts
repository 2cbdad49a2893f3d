import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { eventually, query, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { loadOAuthConfig } from '../src/config.js';
import { startTokenService } from '../src/oauth.js';

describe('token service: a start that fails midway', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let cp: TestControlPlane;
  let taken: net.Server;

  before(async function () {
    postgres = await startTestPostgres();
    cp = await createTestControlPlane(postgres, { issuer: 'http://oauth.test', audience: 'http://api.test' });
    taken = net.createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
  });

  after(async function () {
    taken?.close();
    await cp?.close();
    await postgres?.stop();
  });

  /** Sessions on the control plane's database opened since `since`, besides the one asking. */
  const sessionsSince = async (since: Date) =>
    Number(
      (await query<{ n: string }>(cp.url, 'select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_start >= $1', [since]))[0].n,
    );

  it('closes what it opened (the control plane, the client-change listener) when its port is taken', async function () {
    const port = (taken.address() as net.AddressInfo).port;
    const config = loadOAuthConfig({ ...cp.env, OAUTH_HOST: '127.0.0.1', OAUTH_PORT: String(port), PUBLIC_BASE_URL: 'http://api.test', LOG_LEVEL: 'silent' });
    const [{ now: since }] = await query<{ now: Date }>(cp.url, 'select clock_timestamp() as now');
    const error = await rejection(startTokenService(config));
    expect(error.code).to.equal('EADDRINUSE');
    // The start got as far as listening, so it had opened both; a session's end reaches the server a moment later.
    await eventually(async () => ((await sessionsSince(since)) === 0 ? true : undefined), 10_000, 'no session of the failed start left');
  });
});
