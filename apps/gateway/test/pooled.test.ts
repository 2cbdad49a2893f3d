import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { once } from 'node:events';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, rejection } from '@platform/testing';
import { cancelRequest } from './support/raw-client.js';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

type PgError = Error & { code?: string; severity?: string; detail?: string };
type KeyedClient = pg.Client & { processID: number; secretKey: number };

/** A CancelRequest on a connection of its own (plain, as libpq sends it), to the gateway on `port`. */
async function sendCancel(port: number, processId: number, secretKey: number): Promise<void> {
  const key = Buffer.alloc(4);
  key.writeInt32BE(secretKey);
  const socket = net.connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.end(cancelRequest(processId, key));
  await once(socket, 'close');
}

/** The pooled endpoint (GATEWAY_POOLED_PORT): logins, pools, tenants and settings per client. */
describe('gateway: pooled endpoint (transaction pooling)', function () {
  this.timeout(60_000);
  let p: GatewayPlatform;
  let db: TestDatabase;
  let unscoped: TestCredential;
  let tenants: { a: string; b: string };

  /** A node-postgres client of the pooled endpoint; the caller ends it. */
  const pooled = (credential: TestCredential, overrides: Partial<pg.ClientConfig> = {}) => connectVerified(p, { ...credential, connectionUrl: credential.pooledConnectionUrl! }, overrides);

  /** The credential role's server sessions now. */
  async function serverSessions(credential: TestCredential): Promise<number> {
    const rows = await p.superuserQuery('postgres', 'select count(*)::int as n from pg_stat_activity where usename = $1', [credential.id]);
    return rows[0].n as number;
  }

  before(async function () {
    this.timeout(120_000);
    // Pools of 2, a short queue wait so that the test of a full pool is quick.
    // Idle server connections close after a second: a test waits for that.
    p = await startGatewayPlatform({ GATEWAY_POOL_SIZE: '2', GATEWAY_POOL_WAIT_MS: '1000', GATEWAY_POOL_IDLE_MS: '1000' }, { pooled: true });
    db = await p.newDatabase();
    tenants = { a: await db.newTenant('Tenant A'), b: await db.newTenant('Tenant B') };
    unscoped = await db.newCredential();
  });

  after(async function () {
    this.timeout(60_000);
    await p?.stop();
  });

  it('names the pooled endpoint in a new credential’s answer, beside the session endpoint', function () {
    const session = new URL(unscoped.connectionUrl);
    const url = new URL(unscoped.pooledConnectionUrl!);
    expect(url.port).to.equal(String(p.pooledPort));
    session.port = String(p.pooledPort);
    expect(url.href).to.equal(session.href);
  });

  it('logs in without a server session per client: 10 clients at once hold 2 server sessions', async function () {
    const clients = await Promise.all(Array.from({ length: 10 }, () => pooled(unscoped)));
    try {
      // Each statement lasts 100 ms: ten at once need both sessions (quicker ones could all pass through one).
      const answers = await Promise.all(clients.map((client, i) => client.query<{ who: string; n: number }>('select current_user as who, $1::int as n from pg_sleep(0.1)', [i])));
      expect(answers.map((answer) => answer.rows[0])).to.deep.equal(clients.map((_, i) => ({ who: unscoped.id, n: i })));
      expect(await serverSessions(unscoped)).to.equal(2);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('closes idle server connections after GATEWAY_POOL_IDLE_MS, and a client logged in before gets a new one', async function () {
    const client = await pooled(unscoped);
    try {
      await eventually(async () => ((await serverSessions(unscoped)) === 0 ? true : undefined), 10_000, 'the idle server connections to close');
      expect((await client.query('select 3 as n')).rows).to.deep.equal([{ n: 3 }]);
      expect(await serverSessions(unscoped)).to.equal(1);
    } finally {
      await client.end();
    }
  });

  it('reads verifiers in the cluster’s maintenance database, where no customer object can be (its privileged session)', async function () {
    // A credential whose verifier the gateway has not read yet: its login reads it now.
    const fresh = await db.newCredential();
    const client = await pooled(fresh);
    await client.end();
    // The gateway's administrator session of the verifier reads: where it runs, and with what search path.
    const [session] = await p.superuserQuery('postgres', "select a.datname, r.rolsuper as usesuper from pg_stat_activity a join pg_roles r on r.rolname = a.usename where a.application_name = 'platform gateway: pooled logins'");
    expect(session).to.deep.equal({ datname: 'postgres', usesuper: true });
    // A customer cannot connect there to plant anything: CONNECT is not theirs.
    const [{ can }] = await p.superuserQuery('postgres', "select has_database_privilege($1, 'postgres', 'CONNECT') as can", [fresh.id]);
    expect(can).to.equal(false);
  });

  it('refuses a wrong password and an unknown name alike, with 28P01', async function () {
    const wrong = (await rejection(pooled(unscoped, { password: 'not the password' }))) as PgError;
    expect({ code: wrong.code, message: wrong.message }).to.deep.equal({ code: '28P01', message: `password authentication failed for user "${unscoped.id}"` });
    const name = `${unscoped.id.slice(0, -4)}ffff`;
    const unknown = (await rejection(pooled(unscoped, { user: name }))) as PgError;
    expect({ code: unknown.code, message: unknown.message }).to.deep.equal({ code: '28P01', message: `password authentication failed for user "${name}"` });
  });

  it('gives each client its own tenant on shared server sessions, transaction after transaction', async function () {
    const a = await pooled(unscoped, { options: `-c nile.tenant_id=${tenants.a}` });
    const b = await pooled(unscoped, { options: `-c nile.tenant_id=${tenants.b}` });
    const none = await pooled(unscoped);
    try {
      for (let round = 0; round < 5; round++) {
        const seen = await Promise.all([a, b, none].map((client) => client.query<{ tenant: string | null }>("select current_setting('nile.tenant_id', true) as tenant")));
        expect(seen.map((answer) => answer.rows[0].tenant || null)).to.deep.equal([tenants.a, tenants.b, null]);
      }
    } finally {
      await Promise.all([a, b, none].map((client) => client.end()));
    }
  });

  it('serves a scoped credential from a pool of its own role: its tenant’s rows alone, whatever the session sets', async function () {
    const setup = await pooled(unscoped);
    try {
      await setup.query('create table notes (id serial primary key, tenant_id uuid not null, body text not null)');
      for (const [tenant, body] of [[tenants.a, 'for a'], [tenants.b, 'for b']]) {
        await setup.query(`begin; select set_config('nile.tenant_id', '${tenant}', true); insert into notes (tenant_id, body) values ('${tenant}', '${body}'); commit`);
      }
    } finally {
      await setup.end();
    }
    const scoped = await db.newCredential(tenants.a);
    const clients = await Promise.all([pooled(scoped), pooled(scoped, { options: `-c nile.tenant_id=${tenants.a}` })]);
    try {
      for (const client of clients) {
        await client.query(`set nile.tenant_id = '${tenants.b}'`).catch(() => {});
        expect((await client.query('select body from notes order by id')).rows).to.deep.equal([{ body: 'for a' }]);
      }
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('refuses a tenant named at login that is no live tenant (22023), as the session endpoint does', async function () {
    const missing = randomUUID();
    const error = (await rejection(pooled(unscoped, { options: `-c nile.tenant_id=${missing}` }))) as PgError;
    expect({ code: error.code, message: error.message }).to.deep.equal({ code: '22023', message: `tenant "${missing}" does not exist` });
  });

  it('keeps a SET made outside a transaction for its client alone, and a RESET undoes it', async function () {
    const setter = await pooled(unscoped);
    const other = await pooled(unscoped);
    const read = async (client: pg.Client) => (await client.query<{ v: string | null }>("select current_setting('app.colour', true) as v")).rows[0].v || null;
    try {
      await setter.query("set app.colour = 'green'");
      for (let round = 0; round < 4; round++) expect([await read(setter), await read(other)]).to.deep.equal(['green', null]);
      await setter.query('reset app.colour');
      expect(await read(setter)).to.equal(null);
    } finally {
      await Promise.all([setter.end(), other.end()]);
    }
  });

  it('brings back the login’s tenant and settings on RESET, as the session endpoint does, and keeps an explicit empty tenant', async function () {
    const options = `-c nile.tenant_id=${tenants.a} -c search_path=public`;
    const session = await connectVerified(p, unscoped, { options });
    const shared = await pooled(unscoped, { options });
    const other = await pooled(unscoped);
    const read = async (client: pg.Client) =>
      (await client.query<{ tenant: string; path: string }>("select current_setting('nile.tenant_id', true) as tenant, current_setting('search_path') as path")).rows[0];
    try {
      const seen: Record<string, unknown>[] = [];
      for (const client of [session, shared]) {
        await client.query(`set nile.tenant_id = '${tenants.b}'; set search_path = pg_catalog`);
        const changed = await read(client);
        await client.query('reset nile.tenant_id; reset search_path');
        // Another client between: the pooled one's next transaction may run on another server session.
        await other.query('select 1');
        const reset = await read(client);
        await client.query("set nile.tenant_id = ''");
        await other.query('select 1');
        seen.push({ changed, reset, emptied: (await read(client)).tenant });
      }
      expect(seen[0]).to.deep.equal({ changed: { tenant: tenants.b, path: 'pg_catalog' }, reset: { tenant: tenants.a, path: 'public' }, emptied: '' });
      expect(seen[1]).to.deep.equal(seen[0]);
    } finally {
      await Promise.all([session.end(), shared.end(), other.end()]);
    }
  });

  it('runs VACUUM, CREATE INDEX CONCURRENTLY and a rolled-back transaction on a session just handed over, its tenant kept', async function () {
    const setup = await pooled(unscoped);
    await setup.query('create table if not exists maintained (id int)');
    await setup.end();
    const a = await pooled(unscoped, { options: `-c nile.tenant_id=${tenants.a}` });
    const b = await pooled(unscoped, { options: `-c nile.tenant_id=${tenants.b}` });
    try {
      const pids = new Set<number>();
      for (let round = 0; round < 4; round++) {
        // a's transaction first, so that b's next statements come with a hand-over in front of them.
        pids.add((await a.query('select pg_backend_pid() as pid')).rows[0].pid);
        await b.query('vacuum maintained');
        await a.query('select 1');
        await b.query(`create index concurrently if not exists maintained_${round} on maintained (id)`);
        await a.query('select 1');
        await b.query('begin; select 1; rollback');
        expect((await b.query<{ tenant: string }>("select current_setting('nile.tenant_id') as tenant")).rows[0].tenant).to.equal(tenants.b);
      }
      // The pool of two: b's statements ran on sessions a had just used.
      expect(pids.size).to.be.at.most(2);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('leaves nothing of one client to the next on a server session: role, settings, advisory locks, LISTEN, WITH HOLD cursors (pooled-isolation.test.ts has the whole corpus)', async function () {
    // The next clients log in first (a pooled login takes no server session), so that the first
    // client's session is handed to them at once, well within GATEWAY_POOL_IDLE_MS (1 s here):
    // logging in after it, on a slow machine, the session had been closed as idle (CI run, colour null).
    const next = await Promise.all([pooled(unscoped), pooled(unscoped)]);
    const first = await pooled(unscoped);
    let firstPid: number;
    try {
      const physical = (await first.query('select current_database() as name')).rows[0].name as string;
      const admin = `${physical}_admin`;
      // Every state a session keeps past its transaction, left behind on purpose, one transaction each.
      const left = await first.query(
        `begin; set role ${admin}; set app.colour = 'red'; select pg_advisory_lock(42); listen somewhere; declare held cursor with hold for select 1; select pg_backend_pid() as pid; commit`,
      );
      firstPid = (left as unknown as pg.QueryResult[]).find((result) => result.rows?.[0]?.pid !== undefined)!.rows[0].pid as number;
    } finally {
      await first.end();
    }
    try {
      // Both next clients in a transaction at once: the pool's two server sessions, the first client's one of them.
      await Promise.all(next.map((client) => client.query('begin')));
      const states = await Promise.all(
        next.map((client) =>
          client.query(
            "select pg_backend_pid() as pid, current_user as who, (select count(*)::int from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()) as locks, (select count(*)::int from pg_listening_channels()) as channels, (select count(*)::int from pg_cursors) as cursors, nullif(current_setting('app.colour', true), '') as colour",
          ),
        ),
      );
      await Promise.all(next.map((client) => client.query('commit')));
      const pids: number[] = [];
      for (const state of states) {
        const { pid, ...rest } = state.rows[0];
        pids.push(pid);
        expect(rest).to.deep.equal({ who: unscoped.id, locks: 0, channels: 0, cursors: 0, colour: null });
      }
      expect(pids, 'the first client’s server session served a next client').to.include(firstPid);
    } finally {
      await Promise.all(next.map((client) => client.end()));
    }
  });

  it('pins the server session of a client that LISTENs to it until it leaves: its notifications arrive, counted in /metrics', async function () {
    const listener = await pooled(unscoped);
    const other = await pooled(unscoped);
    const direct = await connectVerified(p, unscoped);
    try {
      const heard: { channel: string; payload?: string }[] = [];
      listener.on('notification', (message) => heard.push({ channel: message.channel, payload: message.payload }));
      await listener.query('listen news');
      const pid = (await listener.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect((await p.metrics()).get('gateway_pooled_server_sessions{state="pinned"}')).to.equal(1);
      // Other clients are served on the pool's other session meanwhile, never on the pinned one.
      for (let round = 0; round < 3; round++) expect((await other.query('select pg_backend_pid() as pid')).rows[0].pid).to.not.equal(pid);
      // A notification sent while the listener runs nothing reaches it.
      await direct.query("notify news, 'hello'");
      await eventually(async () => (heard.length > 0 ? true : undefined), 10_000, 'the notification');
      expect(heard).to.deep.equal([{ channel: 'news', payload: 'hello' }]);
      expect((await listener.query('select pg_backend_pid() as pid')).rows[0].pid).to.equal(pid);
    } finally {
      await Promise.all([listener.end(), other.end(), direct.end()]);
    }
    await eventually(async () => ((await p.metrics()).get('gateway_pooled_server_sessions{state="pinned"}') === 0 ? true : undefined), 10_000, 'the pinned session to go back');
  });

  it('gives startup options the meaning PostgreSQL gives them, on both endpoints: lists, quoted names, escaped spaces', async function () {
    const first = await pooled(unscoped);
    const physical = (await first.query('select current_database() as name')).rows[0].name as string;
    await first.end();
    await p.superuserQuery(physical, `create schema if not exists "my schema"; create schema if not exists foo; grant usage on schema foo, "my schema" to "${unscoped.id}"`);
    const read = async (client: pg.Client) =>
      (await client.query<{ path: string; schemas: string[]; app: string }>("select current_setting('search_path') as path, current_schemas(false)::text[] as schemas, current_setting('application_name') as app")).rows[0];
    for (const options of ['-c search_path=foo,public', '-c search_path="my\\ schema",public -c application_name=two\\ words', '--search-path=public,foo']) {
      const session = await connectVerified(p, unscoped, { options });
      const pooledClient = await pooled(unscoped, { options });
      try {
        const [direct, shared] = [await read(session), await read(pooledClient)];
        expect(shared, options).to.deep.equal(direct);
        // And again on whichever server session the next transaction gets.
        expect(await read(pooledClient), options).to.deep.equal(direct);
      } finally {
        await Promise.all([session.end(), pooledClient.end()]);
      }
    }
    const client = await pooled(unscoped, { options: '-c search_path=foo,public' });
    try {
      expect(await read(client)).to.deep.include({ path: 'foo,public', schemas: ['foo', 'public'] });
    } finally {
      await client.end();
    }
  });

  it('answers 57P03, naming the server, when the server does not answer; 53300 stays for a full pool', async function () {
    const client = await pooled(unscoped);
    const [{ directory }] = await p.superuserQuery('postgres', "select current_setting('data_directory') as directory");
    const postmaster = Number(readFileSync(join(directory, 'postmaster.pid'), 'utf8').split('\n')[0]);
    try {
      // No server session left in the pool: the next transaction needs a new one, which a frozen server never logs in.
      await eventually(async () => ((await serverSessions(unscoped)) === 0 ? true : undefined), 10_000, 'the idle server connections to close');
      process.kill(postmaster, 'SIGSTOP');
      let error: PgError;
      try {
        error = (await rejection(client.query('select 1'))) as PgError;
      } finally {
        process.kill(postmaster, 'SIGCONT');
      }
      expect({ code: error.code, severity: error.severity, message: error.message, detail: error.detail }).to.deep.equal({
        code: '57P03',
        severity: 'FATAL',
        message: 'the database server did not answer; try again shortly',
        detail: 'No server connection of the pool could be opened within 1000 ms.',
      });
      // Thawed, the pool opens sessions again.
      const later = await pooled(unscoped);
      expect((await later.query('select 5 as n')).rows).to.deep.equal([{ n: 5 }]);
      await later.end();
    } finally {
      await client.end().catch(() => {});
    }
  });

  it('passes a cancel request with a pooled client’s key to the server session running its query, and drops one while it runs none', async function () {
    const client = (await pooled(unscoped)) as KeyedClient;
    try {
      const sleeping = rejection(client.query('select pg_sleep(30)')) as Promise<PgError>;
      await eventually(async () => {
        const rows = await p.superuserQuery('postgres', "select 1 from pg_stat_activity where usename = $1 and query like 'select pg_sleep%' and state = 'active'", [unscoped.id]);
        return rows.length === 1 ? true : undefined;
      }, 10_000, 'the query to run');
      await sendCancel(p.pooledPort!, client.processID, client.secretKey);
      const error = await sleeping;
      expect([error.code, error.message]).to.deep.equal(['57014', 'canceling statement due to user request']);
      // Idle: nothing to cancel, and the next query is not touched.
      await sendCancel(p.pooledPort!, client.processID, client.secretKey);
      expect((await client.query('select pg_sleep(0.3), 4 as n')).rows[0].n).to.equal(4);
    } finally {
      await client.end();
    }
  });

  it('refuses a client that waits for a server session past GATEWAY_POOL_WAIT_MS with PostgreSQL’s 53300', async function () {
    const holders = await Promise.all([pooled(unscoped), pooled(unscoped)]);
    const waiter = await pooled(unscoped);
    try {
      for (const holder of holders) await holder.query('begin; select 1');
      const error = (await rejection(waiter.query('select 1'))) as PgError;
      expect({ code: error.code, severity: error.severity, message: error.message }).to.deep.equal({ code: '53300', severity: 'FATAL', message: 'sorry, too many clients already' });
      for (const holder of holders) await holder.query('commit');
      // The holders' connections went back: a new client gets one.
      const later = await pooled(unscoped);
      expect((await later.query('select 2 as n')).rows).to.deep.equal([{ n: 2 }]);
      await later.end();
    } finally {
      await Promise.all(holders.map((holder) => holder.end()));
      await waiter.end().catch(() => {});
    }
  });
  it('passes a result far larger than the sockets hold whole, and the server session then serves other clients', async function () {
    const client = await pooled(unscoped);
    try {
      // 16 MB in one answer: the gateway's writes to the client back up, and it pauses the server until they drain.
      const { rows } = await client.query<{ s: string }>("select repeat('x', 1000000) || g as s from generate_series(1, 16) as g");
      expect(rows.map((row) => [row.s.length, row.s.slice(-2)])).to.deep.equal(Array.from({ length: 16 }, (_, i) => [1_000_000 + String(i + 1).length, `x${i + 1}`.slice(-2)]));
      // And the other way: a 5 MB parameter, a Bind that comes in many reads.
      expect((await client.query<{ n: number }>('select length($1::text) as n', ['y'.repeat(5_000_000)])).rows).to.deep.equal([{ n: 5_000_000 }]);
      const others = await Promise.all([pooled(unscoped), pooled(unscoped)]);
      expect((await Promise.all(others.map((other, i) => other.query('select $1::int as n', [i])))).map((answer) => answer.rows[0].n)).to.deep.equal([0, 1]);
      await Promise.all(others.map((other) => other.end()));
    } finally {
      await client.end();
    }
  });

  it('passes a long row on as it comes: the server waits while its client does not read, and a client that leaves mid-row has that session closed', async function () {
    const client = await pooled(unscoped);
    const stream = (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
    // A client that stops reading: the gateway takes from the server no more than it can pass on
    // (it held a row whole before, 64 MB here, however slow the client).
    stream.pause();
    void client.query("select repeat('z', 64 * 1024 * 1024) as big").catch(() => {});
    const writing = async () => {
      const rows = await p.superuserQuery('postgres', "select pid, wait_event from pg_stat_activity where usename = $1 and query like 'select repeat(''z''%'", [unscoped.id]);
      return rows.length === 1 && rows[0].wait_event === 'ClientWrite' ? (rows[0].pid as number) : undefined;
    };
    const pid = await eventually(writing, 10_000, 'the server session waiting to send the row');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await writing(), 'still waiting a second later').to.equal(pid);
    // The client leaves with the row half passed on: that server session is not given to another.
    stream.destroy();
    await eventually(async () => ((await p.superuserQuery('postgres', 'select 1 from pg_stat_activity where pid = $1', [pid])).length === 0 ? true : undefined), 10_000, 'the session closed');
    const next = await pooled(unscoped);
    try {
      // And a client that reads gets the whole row, passed on in pieces.
      const { rows } = await next.query<{ big: string }>("select repeat('z', 20 * 1024 * 1024) || 'end' as big");
      expect([rows[0].big.length, rows[0].big.slice(-4)]).to.deep.equal([20 * 1024 * 1024 + 3, 'zend']);
      expect((await next.query('select 7 as n')).rows).to.deep.equal([{ n: 7 }]);
    } finally {
      await next.end();
    }
  });

  it('cuts the server session of a client that leaves in the middle of an answer, instead of letting the statement run on for nobody', async function () {
    /** Runs `sql` on a pooled client that stops reading, waits until its server session is `waiting`, then leaves; answers when that session ended. */
    const leaveDuring = async (sql: string, like: string, waiting: string) => {
      const client = await pooled(unscoped);
      const stream = (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
      try {
        stream.pause();
        void client.query(sql).catch(() => {});
        const pid = await eventually(async () => {
          const rows = await p.superuserQuery('postgres', 'select pid from pg_stat_activity where usename = $1 and query like $2 and wait_event = $3', [unscoped.id, like, waiting]);
          return rows.length === 1 ? (rows[0].pid as number) : undefined;
        }, 10_000, `the server session in ${waiting}`);
        stream.destroy();
        await eventually(async () => ((await p.superuserQuery('postgres', 'select 1 from pg_stat_activity where pid = $1', [pid])).length === 0 ? true : undefined), 10_000, `${sql} ended`);
      } finally {
        stream.destroy();
      }
    };
    // 10 GB in rows of 1 kB (a set-returning function in the select list streams): a Terminate behind it would be read when it ends, minutes from now.
    await leaveDuring("select repeat('w', 1000) as r, generate_series(1, 10000000)", "select repeat('w'%", 'ClientWrite');
    // A statement that writes nothing meanwhile would not see the connection cut: it is cancelled too.
    await leaveDuring('select pg_sleep(300)', 'select pg_sleep%', 'PgSleep');
  });

  it('tells a client whose server session is terminated mid-transaction, and serves the next client on a new one', async function () {
    const client = await pooled(unscoped);
    const heard: PgError[] = [];
    client.on('error', (error: PgError) => heard.push(error));
    await client.query('begin');
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    await p.superuserQuery('postgres', 'select pg_terminate_backend($1)', [rows[0].pid]);
    await eventually(async () => (heard.length > 0 ? true : undefined), 10_000, 'the client to hear of it');
    expect([heard[0].code, heard[0].severity, heard[0].message]).to.deep.equal(['57P01', 'FATAL', 'terminating connection due to administrator command']);
    const next = await pooled(unscoped);
    try {
      expect((await next.query('select 5 as n')).rows).to.deep.equal([{ n: 5 }]);
    } finally {
      await next.end();
      await client.end().catch(() => {});
    }
  });
  it('refuses a message it cannot read with 08P01, closing that client alone', async function () {
    const client = await pooled(unscoped);
    const heard = new Promise<PgError>((resolve) => client.once('error', resolve));
    // A Parse whose statement name has no terminating zero byte.
    (client as unknown as { connection: { stream: net.Socket } }).connection.stream.write(Buffer.from([0x50, 0, 0, 0, 5, 0x78]));
    const error = await heard;
    expect([error.code, error.severity, error.message]).to.deep.equal(['08P01', 'FATAL', 'invalid message format']);
    await client.end().catch(() => {});
    const next = await pooled(unscoped);
    try {
      expect((await next.query('select 6 as n')).rows).to.deep.equal([{ n: 6 }]);
    } finally {
      await next.end();
    }
  });
});
