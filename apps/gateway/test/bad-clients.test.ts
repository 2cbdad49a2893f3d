import { expect } from 'chai';
import { once } from 'node:events';
import { eventually, rejection } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, frontendMessage, int32s, simpleQuery, startupPacket } from './support/raw-client.js';

// Short, yet long enough for a good client's whole handshake on a busy machine.
const HANDSHAKE_TIMEOUT_MS = 3000;
const CLIENT_STALL_MS = 1000;

describe('gateway: bad input on the wire', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;

  /** Right after each bad client, a good one still logs in and queries. */
  async function expectServing(): Promise<void> {
    const client = await connectVerified(p, credential);
    try {
      expect((await client.query('select 40 + 2 as answer')).rows).to.deep.equal([{ answer: 42 }]);
    } finally {
      await client.end();
    }
  }

  /** Milliseconds from now until the connection is closed by the gateway. */
  async function closedAfter(connection: RawConnection, started: number): Promise<number> {
    await connection.closed;
    return Date.now() - started;
  }

  async function loggedIn(): Promise<RawConnection> {
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
    await connection.login(credential.id, db.name, credential.password);
    return connection;
  }

  async function physicalName(): Promise<string> {
    const client = await connectVerified(p, credential);
    try {
      return (await client.query('select current_database() as name')).rows[0].name;
    } finally {
      await client.end();
    }
  }

  async function sessionsOf(roleName: string): Promise<number> {
    const rows = await p.superuserQuery('postgres', 'select count(*)::int as n from pg_stat_activity where usename = $1', [roleName]);
    return rows[0].n as number;
  }

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform({ GATEWAY_HANDSHAKE_TIMEOUT_MS: String(HANDSHAKE_TIMEOUT_MS), GATEWAY_CLIENT_STALL_MS: String(CLIENT_STALL_MS) });
    db = await p.newDatabase();
    credential = await db.newCredential();
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  it('answers a garbage startup packet with 08P01 and closes', async function () {
    const cases: [Buffer, string, string][] = [
      [Buffer.from('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n'), '08P01', 'invalid length of startup packet'],
      [Buffer.concat([int32s(16, 196608), Buffer.from('user\0no-end')]), '08P01', 'invalid startup packet layout: expected terminator as last byte'],
      [Buffer.concat([int32s(8, 0x00020000)]), '0A000', 'unsupported frontend protocol 2.0: server supports 3.0 to 3.2'],
      [Buffer.concat([int32s(8, 80877102)]), '08P01', 'invalid length of cancel request packet'],
      [Buffer.concat([int32s(12, 80877102, 1)]), '08P01', 'invalid length of cancel key in cancel request packet'],
      [int32s(2, 0), '08P01', 'invalid length of startup packet'],
    ];
    for (const [bytes, code, message] of cases) {
      const connection = await RawConnection.open(p.gatewayPort);
      connection.write(bytes);
      const fields = await connection.fatalError();
      expect([fields.S, fields.C, fields.M]).to.deep.equal(['FATAL', code, message]);
      await expectServing();
    }
  });

  it('refuses with PostgreSQL’s fields exactly (S, V, C, M; never the server’s file, line or routine), its own refusals and the cluster’s', async function () {
    const refusal = async (packet: Buffer, password?: string) => {
      const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
      if (password === undefined) {
        connection.write(packet);
        return connection.fatalError();
      }
      const error = (await rejection(connection.login(credential.id, packet.toString(), password))) as Error & { fields: Record<string, string> };
      await connection.closed;
      return error.fields;
    };
    const fatal = (code: string, message: string) => ({ S: 'FATAL', V: 'FATAL', C: code, M: message });
    expect(await refusal(int32s(8, 0x0004_0000))).to.deep.equal(fatal('0A000', 'unsupported frontend protocol 4.0: server supports 3.0 to 3.2'));
    expect(await refusal(startupPacket({ database: db.name }))).to.deep.equal(fatal('28000', 'no PostgreSQL user name specified in startup packet'));
    expect(await refusal(Buffer.from(db.name), 'not the password')).to.deep.equal(fatal('28P01', `password authentication failed for user "${credential.id}"`));
    expect(await refusal(Buffer.from('no_such_database'), credential.password)).to.deep.equal(fatal('3D000', 'database "no_such_database" does not exist'));
    // The cluster's own refusal once the session starts (a setting it rejects) keeps its words, not its source.
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
    const error = (await rejection(connection.login(credential.id, db.name, credential.password, { options: '-c work_mem=nonsense' }))) as Error & { fields: Record<string, string> };
    expect(error.fields).to.deep.equal(fatal('22023', 'invalid value for parameter "work_mem": "nonsense"'));
    await expectServing();
  });

  it('refuses a startup packet longer than 10000 bytes, before and after TLS', async function () {
    const long = Buffer.concat([int32s(10_001, 196608), Buffer.alloc(10_001 - 8, 0x61)]);
    const plain = await RawConnection.open(p.gatewayPort);
    plain.write(long);
    expect((await plain.fatalError()).M).to.equal('invalid length of startup packet');
    const secure = await RawConnection.openTls(p.gatewayPort, p.ca);
    secure.write(long);
    const fields = await secure.fatalError();
    expect([fields.C, fields.M]).to.deep.equal(['08P01', 'invalid length of startup packet']);
    // Routing puts the physical name in place of the database's: the longest packet that still
    // fits PostgreSQL's limit then goes on, and a longer one is refused with the reason.
    const growth = (await physicalName()).length - db.name.length;
    const packetOf = (length: number) => {
      const filler = length - startupPacket({ user: credential.id, database: db.name, application_name: '' }).length;
      return startupPacket({ user: credential.id, database: db.name, application_name: 'x'.repeat(filler) });
    };
    const tooLong = await RawConnection.openTls(p.gatewayPort, p.ca);
    tooLong.write(packetOf(10_000));
    expect(await tooLong.fatalError()).to.deep.equal({
      S: 'FATAL',
      V: 'FATAL',
      C: '08P01',
      M: 'invalid length of startup packet',
      D: `Routed to its database, the packet would be ${10_000 + growth} bytes, over 10000.`,
    });
    const longest = await RawConnection.openTls(p.gatewayPort, p.ca);
    longest.write(packetOf(10_000 - growth));
    const challenge = await longest.message();
    expect([challenge.type, challenge.body.readInt32BE(0)]).to.deep.equal(['R', 10]);
    longest.end();
    await expectServing();
  });

  it('closes a session that sends a message length below 4 (08P01) or of 0x7fffffff', async function () {
    const short = await loggedIn();
    short.write(Buffer.concat([Buffer.from('Q'), int32s(3)]));
    const fields = await short.fatalError();
    expect([fields.S, fields.C, fields.M]).to.deep.equal(['FATAL', '08P01', 'invalid message length 3']);

    const huge = await loggedIn();
    huge.write(Buffer.concat([Buffer.from('Q'), int32s(0x7fffffff), Buffer.from('select 1')]));
    // PostgreSQL refuses a message over 1 GB and ends the session; the gateway closes the client.
    await closedAfter(huge, Date.now());
    await eventually(async () => ((await sessionsOf(credential.id)) === 0 ? true : undefined), 5_000, 'the backend sessions to end');
    await expectServing();
  });

  it('refuses a half-open connection within the handshake timeout with 57014 and closes it', async function () {
    const starts = [
      // Three bytes of a length, and nothing more.
      async () => {
        const connection = await RawConnection.open(p.gatewayPort);
        connection.write(Buffer.from([0, 0, 0]));
        return connection;
      },
      // TLS set up, then silence.
      async () => RawConnection.openTls(p.gatewayPort, p.ca),
      // A startup packet, then no answer to the password request: the backend's half goes too.
      async () => {
        const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
        connection.write(startupPacket({ user: credential.id, database: db.name }));
        expect((await connection.message()).type).to.equal('R');
        return connection;
      },
    ];
    const ended = await Promise.all(
      starts.map(async (start) => {
        const started = Date.now();
        const connection = await start();
        // The gateway waited for the client: PostgreSQL's words for that, with its SQLSTATE, never a bare close.
        const fields = await connection.fatalError();
        return { fields: [fields.S, fields.C, fields.M], ms: Date.now() - started };
      }),
    );
    for (const { fields, ms } of ended) {
      expect(fields).to.deep.equal(['FATAL', '57014', 'canceling authentication due to timeout']);
      expect(ms).to.be.within(HANDSHAKE_TIMEOUT_MS - 50, HANDSHAKE_TIMEOUT_MS + 3000);
    }
    await eventually(async () => ((await sessionsOf(credential.id)) === 0 ? true : undefined), 5_000, 'the half-authenticated backend to go');
    await expectServing();
  });

  it('closes a session whose client stops reading a large result, after the stall time, and its backend session goes', async function () {
    this.timeout(30_000);
    const other = await db.newCredential();
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
    await connection.login(other.id, db.name, other.password);
    connection.socket.pause();
    const started = Date.now();
    // About 200 MB of rows; the client reads none of it.
    connection.write(simpleQuery("select repeat('x', 1000) from generate_series(1, 200000)"));
    await eventually(async () => ((await sessionsOf(other.id)) === 0 ? Date.now() - started : undefined), 15_000, 'the stalled backend session to end');
    expect(Date.now() - started).to.be.at.least(CLIENT_STALL_MS);
    // What the gateway had sent before closing can still be read, and then the connection ends.
    connection.socket.resume();
    await connection.closed;
    expect(connection.received).to.be.greaterThan(0).and.lessThan(50_000_000);
    await expectServing();
  });

  it('closes a connection that sends a huge burst before the handshake ends', async function () {
    this.timeout(20_000);
    const burst = Buffer.alloc(8 << 20, 0x51);
    // Over TLS, right behind the startup packet; and in the clear, right behind the SSLRequest.
    // Neither client reads or closes: the gateway stops reading at 1 MB, and cuts them off at the
    // handshake deadline.
    const started = Date.now();
    const secure = await RawConnection.openTls(p.gatewayPort, p.ca);
    secure.write(Buffer.concat([startupPacket({ user: credential.id, database: db.name }), burst]));
    const plain = await RawConnection.open(p.gatewayPort);
    plain.write(Buffer.concat([int32s(8, 80877103), burst]));
    await Promise.all([secure.closed, plain.closed]);
    expect(Date.now() - started).to.be.within(HANDSHAKE_TIMEOUT_MS - 50, HANDSHAKE_TIMEOUT_MS + 3000);
    // Queries pipelined before the password exchange even started.
    const pipelined = await RawConnection.openTls(p.gatewayPort, p.ca);
    pipelined.write(Buffer.concat([startupPacket({ user: credential.id, database: db.name }), ...Array.from({ length: 20_000 }, () => simpleQuery('select pg_sleep(10)'))]));
    const fields = await pipelined.fatalError();
    expect([fields.C, fields.M]).to.deep.equal(['08P01', 'expected SASL response, got message type 81']);
    await eventually(async () => ((await sessionsOf(credential.id)) === 0 ? true : undefined), 5_000, 'no session left');
    await expectServing();
  });

  it('answers a frontend message in place of the SASL response with 08P01', async function () {
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
    connection.write(startupPacket({ user: 'not_a_credential', database: db.name }));
    expect((await connection.message()).type).to.equal('R');
    connection.write(frontendMessage('Q', Buffer.from('select 1\0')));
    const fields = await connection.fatalError();
    expect([fields.C, fields.M]).to.deep.equal(['08P01', 'expected SASL response, got message type 81']);
    await expectServing();
  });

  it('lets go of a finished session’s socket after the stall time when the client never closes its side', async function () {
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca, { allowHalfOpen: true });
    await connection.login(credential.id, db.name, credential.password);
    const ended = once(connection.socket, 'end');
    const started = Date.now();
    connection.write(frontendMessage('X', Buffer.alloc(0)));
    // The backend ends the session and the gateway its side; this client keeps its own open.
    await ended;
    await eventually(async () => ((await p.metrics()).get('gateway_connections') === 0 ? true : undefined), CLIENT_STALL_MS + 5_000, 'the gateway to let go');
    expect(Date.now() - started).to.be.at.least(CLIENT_STALL_MS - 50);
    connection.end();
  });

  it('is still alive and healthy after all of it', async function () {
    expect(p.gateway.child.exitCode).to.equal(null);
    const health = await fetch(`${p.gateway.url}/healthz`);
    expect([health.status, await health.json()]).to.deep.equal([200, { status: 'ok' }]);
    await eventually(async () => ((await p.metrics()).get('gateway_connections') === 0 ? true : undefined), 5_000, 'every connection to close');
  });
});
