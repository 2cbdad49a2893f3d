import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import knex from 'knex';
import { eventually, rejection } from '@platform/testing';
import type { AppProcess } from '@platform/test-fixtures';
import { PG_DUMP_18, PSQL_18, conninfoOf, connectVerified, psql, runningStatement, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, cancelRequest, int32s, simpleQuery } from './support/raw-client.js';

const PROTOCOL_3_0 = 0x0003_0000;
const PROTOCOL_3_2 = 0x0003_0002;

/** A CancelRequest on a connection of its own (plain, as libpq sends it), to the gateway on `port`. */
async function sendCancel(port: number, processId: number, secretKey: Buffer): Promise<void> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.end(cancelRequest(processId, secretKey));
  await once(socket, 'close');
}

/** BackendKeyData's process id and key, from the messages of a login. */
function keyOf(messages: { type: string; body: Buffer }[]): { processId: number; key: Buffer } {
  const keyData = messages.filter((message) => message.type === 'K');
  expect(keyData).to.have.length(1);
  return { processId: keyData[0].body.readInt32BE(0), key: keyData[0].body.subarray(4) };
}

describe('gateway: protocol versions 3.0 and 3.2, cancel keys, direct TLS', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;
  let another: { process: AppProcess; port: number } | undefined;

  /** A raw TLS session of `credential` on protocol `version`, with what its login got. */
  async function rawSession(version: number, parameters: Record<string, string> = {}) {
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
    const messages = await connection.login(credential.id, db.name, credential.password, parameters, version);
    const [[pid]] = await connection.query('select pg_backend_pid()');
    return { connection, messages, backendPid: Number(pid) };
  }

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform();
    db = await p.newDatabase();
    credential = await db.newCredential();
  });

  after(async function () {
    this.timeout(90_000);
    await another?.process.stop();
    await p?.stop();
  });

  it('negotiates as PostgreSQL 18 does: nothing to say to 3.0 or 3.2, 3.2 to a client asking more, the ignored _pq_ options', async function () {
    const v32 = await rawSession(PROTOCOL_3_2);
    expect(v32.messages.filter((message) => message.type === 'v')).to.deep.equal([]);
    // The client sees its backend's own pid; its key is 35 bytes: format 1, the slot (region 1), the server's 32.
    const long = keyOf(v32.messages);
    expect([long.processId, long.key.length, [...long.key.subarray(0, 3)]]).to.deep.equal([v32.backendPid, 35, [1, 0, 1]]);
    v32.connection.end();

    const newer = await rawSession(0x0003_0005);
    expect(newer.messages[0]).to.deep.equal({ type: 'v', body: int32s(PROTOCOL_3_2, 0) });
    expect(keyOf(newer.messages).key.length).to.equal(35);
    newer.connection.end();

    const options = await rawSession(PROTOCOL_3_0, { '_pq_.compression': 'on' });
    expect(options.messages[0]).to.deep.equal({ type: 'v', body: Buffer.concat([int32s(PROTOCOL_3_0, 1), Buffer.from('_pq_.compression\0')]) });
    const short = keyOf(options.messages);
    expect([short.processId, short.key.length]).to.deep.equal([options.backendPid, 4]);
    expect(await options.connection.query('select 1')).to.deep.equal([['1']]);
    options.connection.end();
  });

  it('serves psql and pg_dump 18 on protocol 3.2 (max_protocol_version=latest, min_protocol_version=3.2)', async function () {
    this.timeout(30_000);
    const created = await psql(p, credential, ['create table dumped (id int primary key, label text)', "insert into dumped values (1, 'one'), (2, 'two')", 'select count(*) from dumped'], {
      binary: PSQL_18,
      conninfo: ['min_protocol_version=3.2', 'max_protocol_version=latest'],
    });
    expect([created.status, created.stderr, created.stdout]).to.deep.equal([0, '', '2\n']);
    const dump = spawn(PG_DUMP_18, ['--table=dumped', '--no-owner', '--dbname', conninfoOf(p, credential, ['max_protocol_version=latest'])], {
      env: { PATH: process.env.PATH, PGPASSWORD: credential.password },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [stdout, stderr] = ['', ''];
    dump.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    dump.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const [status] = await once(dump, 'close');
    expect([status, stderr]).to.deep.equal([0, '']);
    expect(stdout).to.contain('CREATE TABLE public.dumped (');
    expect(stdout).to.contain('COPY public.dumped (id, label) FROM stdin;\n1\tone\n2\ttwo\n\\.\n');
  });

  it('takes direct TLS (sslnegotiation=direct) with ALPN postgresql, from psql 18 on 3.0 and 3.2', async function () {
    for (const version of ['max_protocol_version=3.0', 'max_protocol_version=latest']) {
      const result = await psql(p, credential, ['select current_user'], { binary: PSQL_18, conninfo: ['sslnegotiation=direct', version] });
      expect([result.status, result.stderr, result.stdout], version).to.deep.equal([0, '', `${credential.id}\n`]);
    }
    const raw = await RawConnection.openDirectTls(p.gatewayPort, p.ca);
    await raw.login(credential.id, db.name, credential.password);
    expect(await raw.query('select 2')).to.deep.equal([['2']]);
    raw.end();
  });

  it('refuses direct TLS without ALPN postgresql as PostgreSQL does: a failed handshake, or a close without a word', async function () {
    const wrongProtocol = await rejection(RawConnection.openDirectTls(p.gatewayPort, p.ca, ['http/1.1']));
    expect((wrongProtocol as Error & { code?: string }).code).to.equal('ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL');
    const noAlpn = await RawConnection.openDirectTls(p.gatewayPort, p.ca, null);
    await noAlpn.closed;
    expect(noAlpn.received).to.equal(0);
    // Still served afterwards.
    const result = await psql(p, credential, ['select 3'], { binary: PSQL_18, conninfo: ['sslnegotiation=direct'] });
    expect([result.status, result.stdout]).to.deep.equal([0, '3\n']);
  });

  it('cancels a 3.2 session’s query with its long key through either gateway; a wrong key cancels nothing', async function () {
    this.timeout(40_000);
    another = await p.startAnotherGateway();
    const { connection, messages } = await rawSession(PROTOCOL_3_2);
    const { processId, key } = keyOf(messages);
    try {
      for (const port of [p.gatewayPort, another.port]) {
        const started = Date.now();
        connection.write(simpleQuery('select pg_sleep(30)'));
        await runningStatement(p, credential, 'select pg_sleep');
        await sendCancel(port, processId, key);
        const error = (await rejection(connection.until('Z'))) as Error & { fields: Record<string, string> };
        expect([error.fields.C, error.fields.M], `via port ${port}`).to.deep.equal(['57014', 'canceling statement due to user request']);
        await connection.until('Z');
        expect(Date.now() - started).to.be.lessThan(5_000);
      }
      const wrong = Buffer.from(key);
      wrong[wrong.length - 1] ^= 1;
      connection.write(simpleQuery('select pg_sleep(1.5)'));
      await runningStatement(p, credential, 'select pg_sleep');
      await sendCancel(another.port, processId, wrong);
      // A key the gateway did not make (another format byte) goes nowhere either.
      await sendCancel(another.port, processId, Buffer.concat([Buffer.from([2]), key.subarray(1)]));
      expect((await connection.until('Z')).map((message) => message.type)).to.deep.equal(['T', 'D', 'C', 'Z']);
    } finally {
      connection.end();
    }
  });

  it('lets psql 18 on protocol 3.2 cancel on SIGINT', async function () {
    this.timeout(20_000);
    const child = spawn(PSQL_18, ['-X', '-c', 'select pg_sleep(30)', conninfoOf(p, credential, ['max_protocol_version=latest'])], {
      env: { PATH: process.env.PATH, PGPASSWORD: credential.password },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const exited = once(child, 'close');
    await runningStatement(p, credential, 'select pg_sleep');
    child.kill('SIGINT');
    const [status] = await exited;
    expect([status, stderr]).to.deep.equal([1, 'Cancel request sent\nERROR:  canceling statement due to user request\n']);
  });

  it('gives a 3.0 client its backend’s pid: pg_cancel_backend, pg_terminate_backend and a notification’s pid agree with it', async function () {
    this.timeout(30_000);
    const [target, other] = [await connectVerified(p, credential), await connectVerified(p, credential)];
    const processId = (target as unknown as { processID: number }).processID;
    try {
      expect((await target.query('select pg_backend_pid() as pid')).rows).to.deep.equal([{ pid: processId }]);
      const notified = once(target, 'notification');
      await target.query('listen news');
      await target.query("notify news, 'hello'");
      const [notification] = await notified;
      expect([notification.processId, notification.payload]).to.deep.equal([processId, 'hello']);

      const sleeping = rejection(target.query('select pg_sleep(30)')) as Promise<Error & { code?: string }>;
      await runningStatement(p, credential, 'select pg_sleep');
      expect((await other.query('select pg_cancel_backend($1) as done', [processId])).rows).to.deep.equal([{ done: true }]);
      expect((await sleeping).code).to.equal('57014');
      expect((await target.query('select 1 as alive')).rows).to.deep.equal([{ alive: 1 }]);

      const ended = rejection(target.query('select pg_sleep(30)')) as Promise<Error & { code?: string }>;
      await runningStatement(p, credential, 'select pg_sleep');
      expect((await other.query('select pg_terminate_backend($1) as done', [processId])).rows).to.deep.equal([{ done: true }]);
      expect((await ended).code).to.equal('57P01');
    } finally {
      await Promise.all([target.end().catch(() => {}), other.end()]);
    }
  });

  it('lets Knex’s query timeout with cancel stop the query (it calls pg_cancel_backend with the pid it was given)', async function () {
    this.timeout(20_000);
    const url = new URL(credential.connectionUrl);
    const orm = knex({
      client: 'pg',
      connection: { host: url.hostname, port: Number(url.port), database: db.name, user: credential.id, password: credential.password, ssl: { ca: p.ca, servername: url.hostname } },
      pool: { min: 0, max: 2 },
    });
    try {
      const started = Date.now();
      const error = await rejection(orm.raw('select pg_sleep(30)').timeout(500, { cancel: true }));
      expect(error.name).to.equal('KnexTimeoutError');
      // Nothing of it runs on: the backend was told, not only the client.
      await eventually(async () => {
        const rows = await p.superuserQuery('postgres', "select count(*)::int as n from pg_stat_activity where usename = $1 and query like 'select pg_sleep%' and state = 'active'", [credential.id]);
        return rows[0].n === 0 ? true : undefined;
      }, 5_000, 'the timed-out query to stop');
      expect(Date.now() - started).to.be.lessThan(5_000);
      expect((await orm.raw('select 1 as alive')).rows).to.deep.equal([{ alive: 1 }]);
    } finally {
      await orm.destroy();
    }
  });
});
