// The pooled endpoint's size per pool (README "Pooled endpoint"): a fifth of the sessions the login
// may hold on its cluster (the smaller of its database's and its role's CONNECTION LIMIT) unless
// GATEWAY_POOL_SIZE says otherwise, and never more than that limit.
import { expect } from 'chai';
import type pg from 'pg';
import { physicalDatabaseName } from '@platform/domain';
import { eventually, freePort } from '@platform/testing';
import { connectionsOn, workersOf } from './support/worker-processes.js';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

describe('gateway: pooled endpoint, a size per pool', function () {
  this.timeout(60_000);
  let p: GatewayPlatform;
  let db: TestDatabase;

  /** A client of the pooled endpoint on `port` (the platform's own by default); the caller ends it. */
  const pooled = (credential: TestCredential, port = p.pooledPort!) => {
    const url = new URL(credential.pooledConnectionUrl!);
    url.port = String(port);
    return connectVerified(p, { ...credential, connectionUrl: url.href });
  };

  /** The credential role's server sessions now, as the cluster's administrator sees them. */
  async function serverSessions(credential: TestCredential): Promise<number> {
    const rows = await p.superuserQuery('postgres', 'select count(*)::int as n from pg_stat_activity where usename = $1', [credential.id]);
    return rows[0].n as number;
  }

  /**
   * `clients` clients of `credential` log in at once and each holds a transaction (a pool's server
   * session) for a while, all at once; answers the most server sessions of the role seen meanwhile.
   */
  async function load(credential: TestCredential, clients: number, port?: number): Promise<number> {
    const connected = await Promise.all(Array.from({ length: clients }, () => pooled(credential, port)));
    let most = 0;
    let running = true;
    const watching = (async () => {
      while (running) {
        most = Math.max(most, await serverSessions(credential));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      const holdTransaction = async (client: pg.Client, i: number) => {
        await client.query('begin');
        const { rows } = await client.query<{ n: number }>('select $1::int as n, pg_sleep(0.2)', [i]);
        await client.query('commit');
        return rows[0].n;
      };
      // Every client's transaction ran, queued behind the others for a free server session.
      expect(await Promise.all(connected.map(holdTransaction))).to.deep.equal(connected.map((_, i) => i));
    } finally {
      running = false;
      await watching;
      await Promise.all(connected.map((client) => client.end()));
    }
    return Math.max(most, await serverSessions(credential));
  }

  before(async function () {
    this.timeout(120_000);
    // No GATEWAY_POOL_SIZE: each pool takes a fifth of its login's limit. Clients wait for one long enough to queue.
    p = await startGatewayPlatform({ GATEWAY_POOL_WAIT_MS: '20000' }, { pooled: true });
    db = await p.newDatabase();
    // The database may hold 10 sessions on the cluster (the platform gives it DATABASE_MAX_CONNECTIONS, 300 here).
    await p.superuserQuery('postgres', `alter database ${physicalDatabaseName(db.id)} connection limit 10`);
  });

  after(async function () {
    this.timeout(60_000);
    await p?.stop();
  });

  it('gives a database whose connection limit is 10 pools of 2 server sessions (a fifth), whatever the load', async function () {
    const credential = await db.newCredential();
    expect(await load(credential, 6)).to.equal(2);
    expect(await serverSessions(credential)).to.equal(2);
  });

  it('takes the credential role’s own limit when it is the smaller one: 5 sessions make pools of 1', async function () {
    const credential = await db.newCredential();
    await p.superuserQuery('postgres', `alter role "${credential.id}" connection limit 5`);
    expect(await load(credential, 6)).to.equal(1);
  });

  it('takes GATEWAY_POOL_SIZE when set, never above the login’s limit', async function () {
    const pooledPort = await freePort();
    const other = await p.startAnotherGateway({ GATEWAY_POOL_SIZE: '3', GATEWAY_POOLED_PORT: String(pooledPort) });
    try {
      // The database's 10: pools of 3, the setting, not a fifth.
      const plain = await db.newCredential();
      expect(await load(plain, 6, pooledPort)).to.equal(3);
      // A role that may hold 2: pools of 2, its limit, not the setting.
      const narrow = await db.newCredential();
      await p.superuserQuery('postgres', `alter role "${narrow.id}" connection limit 2`);
      expect(await load(narrow, 6, pooledPort)).to.equal(2);
    } finally {
      await other.process.stop();
    }
  });

  it('divides each pool among GATEWAY_WORKERS, so that the whole gateway holds one pool’s size: 2 workers, pools of 1 each, 2 in all', async function () {
    const pooledPort = await freePort();
    const other = await p.startAnotherGateway({ GATEWAY_WORKERS: '2', GATEWAY_POOLED_PORT: String(pooledPort) });
    try {
      // The ports open once one worker serves: until the second does, every client goes to the first.
      const prober = await db.newCredential();
      await eventually(
        async () => {
          const workers = workersOf(other.process.child.pid!);
          if (workers.length < 2) return undefined;
          const probes = await Promise.all([pooled(prober, pooledPort), pooled(prober, pooledPort)]);
          try {
            return connectionsOn(pooledPort, workers).filter((held) => held > 0).length === 2 ? true : undefined;
          } finally {
            await Promise.all(probes.map((client) => client.end()));
          }
        },
        60_000,
        'both workers to take connections',
      );
      // Round-robin hands each worker 3 of the 6 clients: without the share each would open a pool of 2.
      expect(await load(await db.newCredential(), 6, pooledPort)).to.equal(2);
    } finally {
      await other.process.stop();
    }
  });
});
