import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import type { ConnectionRoute } from '@platform/domain';
import { AuthSchedule } from './login-limits.js';
import { PostgresGateway } from './gateway-server.js';
import { CANCEL_REQUEST_CODE, startupMessage } from './protocol.js';

const HANDSHAKE_TIMEOUT_MS = 500;
const ROLE = 'cred_abcdefghijklmnopqrst';

/** A listening socket standing where a cluster would be: these tests must never reach it. */
async function unreachedBackend(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function route(physicalName: string): ConnectionRoute {
  return { credentialId: ROLE, tenantId: null, database: { id: 'd1', name: 'shop', physicalName, region: 'AWS_US_WEST_2', status: 'READY' } };
}

/** Everything the gateway sends until it closes, and how long that took. */
/** What the gateway sends until it closes, and how long after `started` (by default now) it closed. */
async function answerUntilClosed(socket: net.Socket, started = Date.now()): Promise<{ bytes: Buffer; ms: number }> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('close', resolve));
  return { bytes: Buffer.concat(chunks), ms: Date.now() - started };
}

/** Waits until the gateway holds no socket (the server's own close may trail the client's by a moment). */
async function released(gateway: PostgresGateway): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (gateway.connections > 0) {
    if (Date.now() > deadline) throw new Error(`the gateway still holds ${gateway.connections} connection(s)`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function saslInitialResponse(data: string): Buffer {
  const body = Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.alloc(4), Buffer.from(data)]);
  body.writeInt32BE(Buffer.byteLength(data), 14);
  const head = Buffer.from('p\0\0\0\0', 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function errorFields(bytes: Buffer): Record<string, string> {
  expect(bytes.toString('latin1', 0, 1)).to.equal('E');
  const body = bytes.subarray(5, 1 + bytes.readInt32BE(1));
  return Object.fromEntries(body.toString('utf8').split('\0').filter(Boolean).map((field) => [field[0], field.slice(1)]));
}

describe('PostgresGateway: connections that end in the handshake', () => {
  const physicalName = 'db_0123456789abcdef0123456789abcdef';
  let backend: Awaited<ReturnType<typeof unreachedBackend>>;
  let gateway: PostgresGateway | undefined;
  /** The messages the gateway logged as warnings. */
  let warnings: string[] = [];

  /** A gateway without TLS, which accepts plain connections only when told to; answers its port. */
  async function startGateway(
    allowPlain: boolean,
    routes = { find: async (name: string) => (name === ROLE ? route(physicalName) : null) },
    authSchedule?: AuthSchedule,
  ): Promise<number> {
    const target = { host: '127.0.0.1', port: backend.port, index: 1 };
    gateway = new PostgresGateway({
      host: '127.0.0.1',
      port: 0,
      routes: { findInstanceBySlot: async () => null, ...routes },
      backends: [target],
      allowPlain,
      countQueries: true,
      handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
      clientStallMs: 1000,
      maxConnections: 10,
      mockSaltKey: Buffer.alloc(32),
      authSchedule,
      log: { info: () => {}, warn: (_details, message) => warnings.push(message) },
    });
    return (await gateway.listen()).port;
  }

  beforeEach(async () => {
    warnings = [];
    backend = await unreachedBackend();
  });

  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
    await backend.close();
  });

  it('cuts off a refused client that keeps pushing data and never closes, at the handshake deadline', async () => {
    const port = await startGateway(false);
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    // Timed from the connection, as the gateway's deadline is: making and writing 8 MB can take
    // a good part of the deadline on a slow machine (174 ms of 500 seen).
    const connected = Date.now();
    // Refused as plain; the flood behind it fills every buffer, so the client's end never comes.
    socket.write(Buffer.concat([startupMessage([['user', ROLE]]), Buffer.alloc(8 << 20, 0x51)]));
    const { bytes, ms } = await answerUntilClosed(socket, connected);
    expect(ms).to.be.within(HANDSHAKE_TIMEOUT_MS - 50, HANDSHAKE_TIMEOUT_MS + 2000);
    // The refusal went out first (the reset that follows may swallow it: the client never read).
    if (bytes.length > 0) expect(errorFields(bytes).C).to.equal('28000');
    await released(gateway!);
  });

  it('ends a cancel request’s connection, and cuts it off at the deadline when the client keeps its side open', async () => {
    const port = await startGateway(false);
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    await once(socket, 'connect');
    const cancel = Buffer.alloc(16);
    [16, CANCEL_REQUEST_CODE, (7 << 22) + 42, 1234].forEach((value, i) => cancel.writeInt32BE(value, i * 4));
    const started = Date.now();
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const ended = once(socket, 'end');
    socket.write(cancel);
    // A cancel request gets no answer: the gateway ends its side at once...
    await ended;
    expect(Buffer.concat(received).length).to.equal(0);
    expect(gateway!.connections).to.equal(1);
    // ...and lets go of the socket at the deadline, though this client never ends its own.
    await released(gateway!);
    expect(Date.now() - started).to.be.within(HANDSHAKE_TIMEOUT_MS - 50, HANDSHAKE_TIMEOUT_MS + 2000);
    socket.destroy();
  });

  it('counts an adopted connection’s deadline from its accept in the process that accepted it, not from the hand-over', async () => {
    await startGateway(false);
    // A supervisor's listener: it accepted the connection 400 ms before handing it over.
    const supervisor = net.createServer({ pauseOnConnect: true }, (socket) => gateway!.adopt(socket, 'session', Date.now() - (HANDSHAKE_TIMEOUT_MS - 100)));
    supervisor.listen(0, '127.0.0.1');
    await once(supervisor, 'listening');
    try {
      const socket = net.connect({ host: '127.0.0.1', port: (supervisor.address() as net.AddressInfo).port });
      await once(socket, 'connect');
      // The client sends nothing: closed at the deadline, 100 ms after the hand-over rather than 500.
      const { ms } = await answerUntilClosed(socket);
      expect(ms).to.be.below(HANDSHAKE_TIMEOUT_MS - 50);
      await released(gateway!);
    } finally {
      supervisor.close();
    }
  });

  it('refuses a startup packet that routing would make longer than PostgreSQL accepts, before reaching the backend', async () => {
    const withFiller = (length: number) => {
      const bare = startupMessage([['user', ROLE], ['database', 'shop'], ['application_name', '']]).length;
      return startupMessage([['user', ROLE], ['database', 'shop'], ['application_name', 'x'.repeat(length - bare)]]);
    };
    // The physical name is 31 bytes longer than the name the client gives.
    const growth = physicalName.length - 'shop'.length;
    const port = await startGateway(true);
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    socket.write(withFiller(10_000 - growth + 1));
    const fields = errorFields((await answerUntilClosed(socket)).bytes);
    expect(fields).to.deep.equal({
      S: 'FATAL',
      V: 'FATAL',
      C: '08P01',
      M: 'invalid length of startup packet',
      D: 'Routed to its database, the packet would be 10001 bytes, over 10000.',
    });
    expect(backend.connections()).to.equal(0);

    // One byte shorter fits: the gateway asks for the password, and goes on to the backend (which
    // here only hangs up) once the client answers, not before.
    const fitting = net.connect({ host: '127.0.0.1', port });
    await once(fitting, 'connect');
    const challenge = once(fitting, 'data');
    fitting.write(withFiller(10_000 - growth));
    const [bytes] = (await challenge) as [Buffer];
    expect([bytes.toString('latin1', 0, 1), bytes.readInt32BE(5)]).to.deep.equal(['R', 10]);
    expect(backend.connections()).to.equal(0);
    fitting.write(saslInitialResponse('n,,n=,r=abcdefghijklmnopqrstuvwx'));
    await answerUntilClosed(fitting);
    expect(backend.connections()).to.equal(1);
  });

  it('answers 57P03 when the control plane cannot say who a credential is, and reaches no backend', async () => {
    const port = await startGateway(true, {
      find: async () => {
        throw new Error('connection to the control plane lost');
      },
    });
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    socket.write(startupMessage([['user', ROLE], ['database', 'shop']]));
    expect(errorFields((await answerUntilClosed(socket)).bytes)).to.deep.equal({
      S: 'FATAL',
      V: 'FATAL',
      C: '57P03',
      M: 'the gateway cannot look up credentials right now; try again shortly',
    });
    expect(backend.connections()).to.equal(0);
  });

  it('answers an unknown name’s SCRAM messages only after the waits real logins took', async () => {
    // Real logins took 150 ms to the server-first-message and 100 ms to the verdict (all of it
    // within this file's handshake deadline of 500 ms).
    const schedule = new AuthSchedule({ serverFirst: 150, verdict: 100 });
    const port = await startGateway(true, undefined, schedule);
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    const next = () => once(socket, 'data').then(([chunk]) => ({ bytes: chunk as Buffer, at: Date.now() }));
    let answer = next();
    socket.write(startupMessage([['user', 'cred_aaaaaaaaaaaaaaaaaaaa'], ['database', 'shop']]));
    expect((await answer).bytes.readInt32BE(5)).to.equal(10);
    answer = next();
    const sentFirst = Date.now();
    socket.write(saslInitialResponse('n,,n=,r=abcdefghijklmnopqrstuvwx'));
    const serverFirst = await answer;
    expect(serverFirst.bytes.readInt32BE(5)).to.equal(11);
    expect(serverFirst.at - sentFirst).to.be.at.least(140);
    const nonce = /r=([^,]+)/.exec(serverFirst.bytes.toString('utf8', 9))![1];
    const final = Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(32).toString('base64')}`);
    const head = Buffer.from('p\0\0\0\0', 'latin1');
    head.writeInt32BE(final.length + 4, 1);
    const sentFinal = Date.now();
    socket.write(Buffer.concat([head, final]));
    const { bytes, ms } = await answerUntilClosed(socket, sentFinal);
    expect(errorFields(bytes).C).to.equal('28P01');
    expect(ms).to.be.at.least(90);
    expect(backend.connections()).to.equal(0);
  });

  it('answers a real name whose cluster hangs up, or cannot be reached, as it answers an unknown name, and logs why', async () => {
    /** The gateway's answers to a whole exchange with a wrong password for `user`, the salt left out (each name has its own). */
    async function failedLogin(port: number, user: string) {
      const socket = net.connect({ host: '127.0.0.1', port });
      await once(socket, 'connect');
      const next = () => once(socket, 'data').then(([chunk]) => chunk as Buffer);
      let answer = next();
      socket.write(startupMessage([['user', user], ['database', 'shop']]));
      const challenge = await answer;
      answer = next();
      socket.write(saslInitialResponse('n,,n=,r=abcdefghijklmnopqrstuvwx'));
      const serverFirst = (await answer).toString('utf8', 9);
      expect(serverFirst).to.match(/^r=abcdefghijklmnopqrstuvwx[A-Za-z0-9+/]{24},s=[A-Za-z0-9+/]{22}==,i=4096$/);
      const nonce = /r=([^,]+)/.exec(serverFirst)![1];
      const final = Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(32).toString('base64')}`);
      const head = Buffer.from('p\0\0\0\0', 'latin1');
      head.writeInt32BE(final.length + 4, 1);
      const closed = answerUntilClosed(socket);
      socket.write(Buffer.concat([head, final]));
      const fields = errorFields((await closed).bytes);
      return { challenge: challenge.readInt32BE(5), serverFirst: serverFirst.replace(/,s=[^,]*/, ''), fields: { ...fields, M: fields.M.replace(user, '<user>') } };
    }
    const expected = { S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed for user "<user>"' };
    const port = await startGateway(true);
    const hungUp = await failedLogin(port, ROLE);
    expect(backend.connections()).to.equal(1);
    const unknown = await failedLogin(port, 'cred_aaaaaaaaaaaaaaaaaaaa');
    expect({ ...hungUp, serverFirst: hungUp.serverFirst.slice(0, 26) }).to.deep.equal({ ...unknown, serverFirst: unknown.serverFirst.slice(0, 26) });
    expect(hungUp.fields).to.deep.equal(expected);
    // Nothing listens where the cluster was: the client never learns the cluster's address either.
    await backend.close();
    const unreachable = await failedLogin(port, ROLE);
    expect(unreachable.fields).to.deep.equal(expected);
    expect(warnings).to.deep.equal(Array(2).fill('the cluster failed a login before its server-first-message; the client sees a failed password'));
  });
});
