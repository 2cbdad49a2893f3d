import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import type pg from 'pg';
import { rejection } from '@platform/testing';
import type { AppProcess } from '@platform/test-fixtures';
import { connectVerified, psql, runningStatement, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { int32s } from './support/raw-client.js';

type PgError = Error & { code?: string };
/** node-postgres keeps the BackendKeyData it was given here. */
type KeyedClient = pg.Client & { processID: number; secretKey: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A CancelRequest on a connection of its own (plain, as libpq sends it), to the gateway on `port`. */
async function sendCancel(port: number, processId: number, secretKey: number): Promise<void> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.end(int32s(16, 80877102, processId, secretKey));
  await once(socket, 'close');
}

describe('gateway: the PostgreSQL protocol through the gateway', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;
  let another: { process: AppProcess; port: number } | undefined;

  before(async function () {
    this.timeout(120_000);
    // A short stall limit: sessions that wait on the server, or sit idle, are no stall.
    p = await startGatewayPlatform({ GATEWAY_CLIENT_STALL_MS: '1000' });
    db = await p.newDatabase();
    credential = await db.newCredential();
  });

  after(async function () {
    this.timeout(90_000);
    await another?.process.stop();
    await p?.stop();
  });

  it('runs named prepared statements of the extended protocol many times', async function () {
    const client = await connectVerified(p, credential);
    try {
      await client.query('create table items (id int primary key, label text not null, price numeric(10, 2))');
      for (let id = 1; id <= 300; id++) {
        await client.query({ name: 'insert-item', text: 'insert into items values ($1, $2, $3)', values: [id, `item ${id} ✓`, (id * 1.25).toFixed(2)] });
      }
      const found: unknown[] = [];
      for (const id of [7, 150, 300, 301]) found.push((await client.query({ name: 'find-item', text: 'select id, label, price from items where id = $1', values: [id] })).rows);
      expect(found).to.deep.equal([
        [{ id: 7, label: 'item 7 ✓', price: '8.75' }],
        [{ id: 150, label: 'item 150 ✓', price: '187.50' }],
        [{ id: 300, label: 'item 300 ✓', price: '375.00' }],
        [],
      ]);
      // Prepared once each on the backend, then only bound and executed.
      const prepared = await client.query('select name, statement from pg_prepared_statements order by name');
      expect(prepared.rows).to.deep.equal([
        { name: 'find-item', statement: 'select id, label, price from items where id = $1' },
        { name: 'insert-item', statement: 'insert into items values ($1, $2, $3)' },
      ]);
      expect((await client.query('select count(*)::int as n, sum(price)::text as total from items')).rows).to.deep.equal([{ n: 300, total: '56437.50' }]);
    } finally {
      await client.end();
    }
  });

  it('carries COPY FROM STDIN and COPY TO STDOUT (psql’s \\copy) of thousands of rows exactly', async function () {
    const rows = Array.from({ length: 4000 }, (_, i) => {
      const id = i + 1;
      const label = id % 97 === 0 ? '\\N' : `row ${id} — ünïcode ${'x'.repeat(id % 50)}`;
      return `${id}\t${label}\t${(id / 8).toFixed(3)}`;
    });
    const input = `${rows.join('\n')}\n`;
    const loaded = await psql(p, credential, ['create table copied (id int primary key, label text, amount numeric(12, 3))', '\\copy copied from pstdin'], { stdin: input });
    expect([loaded.status, loaded.stderr]).to.deep.equal([0, '']);
    const dumped = await psql(p, credential, ['\\copy (select * from copied order by id) to pstdout']);
    expect([dumped.status, dumped.stderr]).to.deep.equal([0, '']);
    expect(dumped.stdout).to.equal(input);
    const client = await connectVerified(p, credential);
    try {
      const summary = await client.query('select count(*)::int as n, count(label)::int as labelled, sum(amount)::text as total from copied');
      expect(summary.rows).to.deep.equal([{ n: 4000, labelled: 4000 - 41, total: '1000250.000' }]);
    } finally {
      await client.end();
    }
  });

  it('keeps transactions open across statements spread over more than 2 s: one commits, one rolls back', async function () {
    this.timeout(20_000);
    const [writer, undoer, observer] = [await connectVerified(p, credential), await connectVerified(p, credential), await connectVerified(p, credential)];
    try {
      await observer.query('create table ledger (n int, who text)');
      const count = async (who: string) => (await observer.query('select count(*)::int as n from ledger where who = $1', [who])).rows[0].n as number;
      const started = Date.now();
      await Promise.all([writer.query('begin'), undoer.query('begin')]);
      for (let step = 1; step <= 3; step++) {
        await writer.query("insert into ledger values ($1, 'writer')", [step]);
        await undoer.query("insert into ledger values ($1, 'undoer')", [step]);
        // Idle in the transaction for longer than the stall limit: waiting is not stalling.
        if (step < 3) await sleep(1_100);
      }
      expect([await count('writer'), await count('undoer')], 'before the end').to.deep.equal([0, 0]);
      expect((await writer.query("select sum(n)::int as total from ledger where who = 'writer'")).rows).to.deep.equal([{ total: 6 }]);
      await writer.query('commit');
      await undoer.query('rollback');
      expect(Date.now() - started).to.be.greaterThan(2_000);
      expect([await count('writer'), await count('undoer')], 'after').to.deep.equal([3, 0]);
    } finally {
      await Promise.all([writer.end(), undoer.end(), observer.end()]);
    }
  });

  it('cancels a 3.0 session’s query through the gateway that holds it, through another gateway process, and from psql', async function () {
    this.timeout(30_000);
    another = await p.startAnotherGateway();
    const client = (await connectVerified(p, credential)) as KeyedClient;
    try {
      const backendPid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      // The client has its backend's own pid; the 3.0 key is the backend's own, kept by the gateway
      // that holds the session, and passed on to it by the other through the control plane.
      expect(client.processID).to.equal(backendPid);
      for (const port of [p.gatewayPort, another.port]) {
        const started = Date.now();
        const sleeping = rejection(client.query('select pg_sleep(30)')) as Promise<PgError>;
        await runningStatement(p, credential, 'select pg_sleep');
        await sendCancel(port, client.processID, client.secretKey);
        const error = await sleeping;
        expect([error.code, error.message], `via port ${port}`).to.deep.equal(['57014', 'canceling statement due to user request']);
        expect(Date.now() - started).to.be.lessThan(5_000);
        expect((await client.query('select 1 as still')).rows).to.deep.equal([{ still: 1 }]);
      }
      // A wrong secret cancels nothing.
      const sleeping = client.query('select pg_sleep(1.5) as slept');
      await runningStatement(p, credential, 'select pg_sleep');
      await sendCancel(another.port, client.processID, client.secretKey ^ 1);
      expect((await sleeping).rows).to.deep.equal([{ slept: '' }]);
    } finally {
      await client.end();
    }

    // psql cancels on SIGINT with the key the gateway gave it.
    const url = new URL(credential.connectionUrl);
    const child = spawn('/usr/bin/psql', ['-X', '-c', 'select pg_sleep(30)', `host=localhost port=${url.port} dbname=${db.name} user=${credential.id} sslmode=verify-full sslrootcert=${p.caPath}`], {
      env: { PATH: process.env.PATH, PGPASSWORD: credential.password },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const exited = once(child, 'close');
    await runningStatement(p, credential, 'select pg_sleep');
    child.kill('SIGINT');
    const [status] = await exited;
    expect(status).to.equal(1);
    expect(stderr).to.contain('ERROR:  canceling statement due to user request');
  });

  it('serves 200 concurrent connections of several credentials, each with its own answer', async function () {
    this.timeout(60_000);
    // Each credential's role may hold 100 sessions.
    const credentials = await Promise.all([1, 2, 3, 4].map(() => db.newCredential()));
    const clients: pg.Client[] = [];
    try {
      // Logged in 50 at a time, then all 200 held and asked at once: 200 logins at the same moment
      // (TLS, SCRAM, a backend start each, tens of ms of CPU on 2 cores) can outrun the 10 s
      // handshake deadline on a loaded machine, which is not what this test is about.
      for (let batch = 0; batch < 200; batch += 50) {
        const connected = await Promise.all(Array.from({ length: 50 }, (_, j) => connectVerified(p, credentials[(batch + j) % 4])));
        clients.push(...connected);
      }
      const answers = await Promise.all(
        clients.map(async (client, i) => (await client.query('select $1::int * 2 as doubled, current_user as who', [i])).rows[0]),
      );
      expect(answers).to.deep.equal(Array.from({ length: 200 }, (_, i) => ({ doubled: i * 2, who: credentials[i % 4].id })));
      const sessions = await p.superuserQuery('postgres', 'select usename, count(*)::int as n from pg_stat_activity where usename = any($1) group by usename order by usename', [
        credentials.map((each) => each.id),
      ]);
      expect(sessions).to.deep.equal(credentials.map((each) => ({ usename: each.id, n: 50 })).sort((a, b) => a.usename.localeCompare(b.usename)));
      expect((await p.metrics()).get('gateway_connections')).to.be.at.least(200);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('counts queries and errors exactly, per database and tenant, in /metrics', async function () {
    const fresh = await p.newDatabase();
    const tenant = await fresh.newTenant('Counted');
    const [unscoped, scoped] = [await fresh.newCredential(), await fresh.newCredential(tenant)];
    const expectFailure = async (promise: Promise<unknown>) => expect((await rejection(promise)).message).to.be.a('string');

    const plain = await connectVerified(p, unscoped);
    await plain.query('select 1'); // simple
    await plain.query('create table t (n int); insert into t values (1), (2)'); // one simple query, two statements
    await expectFailure(plain.query('select 1/0')); // simple, failed
    await plain.query('select $1::int as n', [5]); // extended: one Execute
    await plain.query({ name: 'by-n', text: 'select n from t where n = $1', values: [1] });
    await plain.query({ name: 'by-n', text: 'select n from t where n = $1', values: [2] });
    await expectFailure(plain.query('select $1::int / 0', [1])); // extended, failed at Execute
    await expectFailure(plain.query('select $1::no_such_type', [1])); // extended, failed at Parse
    await plain.end();

    const bound = await connectVerified(p, scoped);
    await bound.query('select count(*) from t');
    await expectFailure(bound.query('drop table t'));
    await bound.end();
    const optioned = await connectVerified(p, unscoped, { options: `-c platform.tenant_id=${tenant}` });
    await optioned.query('select $1::text', ['x']);
    await optioned.end();

    const metrics = await p.metrics();
    const ofDatabase = [...metrics].filter(([name]) => name.includes(`database_id="${fresh.id}"`) && !name.startsWith('gateway_query_seconds_total'));
    expect(Object.fromEntries(ofDatabase)).to.deep.equal({
      [`gateway_queries_total{database_id="${fresh.id}",tenant_id=""}`]: 8,
      [`gateway_query_errors_total{database_id="${fresh.id}",tenant_id=""}`]: 3,
      [`gateway_queries_total{database_id="${fresh.id}",tenant_id="${tenant}"}`]: 3,
      [`gateway_query_errors_total{database_id="${fresh.id}",tenant_id="${tenant}"}`]: 1,
    });
    expect(metrics.get(`gateway_query_seconds_total{database_id="${fresh.id}",tenant_id=""}`)).to.be.greaterThan(0);
  });
});
