// ConnectionHandOver's bookkeeping with stand-in workers that record what they are sent: which of
// the supervisor's copies close, when a worker leaves the turn and comes back. Real sockets: a copy
// the supervisor closes is a connection its client sees close (the stand-in takes none).
import { expect } from 'chai';
import type { Worker } from 'node:cluster';
import { once } from 'node:events';
import net from 'node:net';
import { ConnectionHandOver } from './hand-over.js';
import type { ConnectionMessage } from './hand-over.js';

interface StandIn {
  worker: Worker;
  /** What it was sent, in order: a connection message, with its socket or without (a probe). */
  sent: { message: ConnectionMessage; socket: net.Socket | undefined }[];
}

function standIn(): StandIn {
  const sent: StandIn['sent'] = [];
  const worker = {
    isConnected: () => true,
    send: (message: ConnectionMessage, socket: net.Socket | undefined, _options: object, done: (error: Error | null) => void) => {
      sent.push({ message, socket });
      done(null);
      return true;
    },
  } as unknown as Worker;
  return { worker, sent };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds (polling), for 5 s at most. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('ConnectionHandOver', function () {
  let handOver: ConnectionHandOver;
  let port: number;
  const stuck: { worker: Worker; closed: number }[] = [];
  const unserved: { closed: number; why: string }[] = [];
  const clients: net.Socket[] = [];

  beforeEach(async function () {
    stuck.length = 0;
    unserved.length = 0;
    handOver = new ConnectionHandOver(
      { acceptFailed: () => {}, stuck: (worker, closed) => stuck.push({ worker, closed }), unserved: (closed, why) => unserved.push({ closed, why }) },
      { max: 3, timeoutMs: 1_000 },
      { takeTimeoutMs: 300, watchEveryMs: 50 },
    );
    port = (await handOver.listen('127.0.0.1', 0, 'session')).port;
  });

  afterEach(function () {
    handOver.close();
    for (const client of clients.splice(0)) client.destroy();
  });

  /** A client connection, once the stand-in `to` was sent it; answers the client and whether it closed. */
  async function connect(to: StandIn): Promise<{ client: net.Socket; closed: () => boolean }> {
    const before = to.sent.length;
    const client = net.connect({ host: '127.0.0.1', port });
    clients.push(client);
    let closed = false;
    client.on('error', () => {});
    client.on('close', () => (closed = true));
    await once(client, 'connect');
    await until(() => to.sent.length > before, 'the connection sent to its worker');
    return { client, closed: () => closed };
  }

  it('hands connections to the serving workers in turn, each with its socket', async function () {
    const [a, b] = [standIn(), standIn()];
    handOver.serving(a.worker);
    handOver.serving(b.worker);
    await connect(a);
    await connect(b);
    await connect(a);
    expect([a.sent.length, b.sent.length]).to.deep.equal([2, 1]);
    expect(a.sent.map(({ message, socket }) => [message.kind, message.endpoint, socket instanceof net.Socket])).to.deep.equal([
      ['connection', 'session', true],
      ['connection', 'session', true],
    ]);
  });

  it('closes the connections sent before the one a worker took: its channel keeps order, so they never reached it', async function () {
    const a = standIn();
    handOver.serving(a.worker);
    const first = await connect(a);
    const second = await connect(a);
    const third = await connect(a);
    handOver.taken(a.worker, a.sent[1].message.id);
    await until(() => first.closed() && second.closed(), 'the first two closed');
    await sleep(50);
    expect(third.closed()).to.equal(false);
  });

  it('takes a worker that takes nothing out of the turn, closes all but its oldest, probes it, and has it back when it answers', async function () {
    const [a, b] = [standIn(), standIn()];
    handOver.serving(a.worker);
    handOver.serving(b.worker);
    const oldest = await connect(a);
    await connect(b);
    const behind = await connect(a);
    handOver.taken(b.worker, b.sent[0].message.id);
    await until(() => stuck.length > 0 && behind.closed(), 'a stuck');
    await sleep(200);
    expect(stuck.map((entry) => [entry.worker === a.worker, entry.closed])).to.deep.equal([[true, 1]]);
    expect([handOver.inTurn(a.worker), handOver.inTurn(b.worker), oldest.closed(), behind.closed()]).to.deep.equal([false, true, false, true]);
    // Once, not every watch: the probe went out, a connection message without a connection.
    const probe = a.sent[a.sent.length - 1];
    expect([a.sent.length, probe.socket]).to.deep.equal([3, undefined]);
    // Meanwhile b gets every connection.
    await connect(b);
    await connect(b);
    expect(a.sent.length).to.equal(3);
    // a answers the probe: the oldest never reached it (a handle lost on the way), and a is back.
    handOver.taken(a.worker, probe.message.id);
    await until(() => oldest.closed(), 'the oldest closed');
    expect(handOver.inTurn(a.worker)).to.equal(true);
  });

  it('closes what a worker had not taken when it is gone, and keeps a stopping worker out of the turn when it answers', async function () {
    const [a, b] = [standIn(), standIn()];
    handOver.serving(a.worker);
    handOver.serving(b.worker);
    const toA = await connect(a);
    await connect(b);
    handOver.retire(b.worker);
    handOver.taken(b.worker, b.sent[0].message.id);
    expect([handOver.inTurn(a.worker), handOver.inTurn(b.worker)]).to.deep.equal([true, false]);
    handOver.gone(a.worker);
    await until(() => toA.closed(), 'the connection sent to a closed');
  });

  /** A client connection, once the supervisor accepted it; answers the client and whether it closed. */
  async function connectHeld(): Promise<{ client: net.Socket; closed: () => boolean }> {
    const before = handOver.heldCount();
    const client = net.connect({ host: '127.0.0.1', port });
    clients.push(client);
    let closed = false;
    client.on('error', () => {});
    client.on('close', () => (closed = true));
    await until(() => closed || handOver.heldCount() > before, 'the connection accepted');
    return { client, closed: () => closed };
  }

  it('holds connections while no worker is in the turn, and hands them, oldest first, to the first worker that serves', async function () {
    const [a, b] = [standIn(), standIn()];
    handOver.serving(a.worker);
    handOver.retire(a.worker);
    const held = [await connectHeld(), await connectHeld()];
    expect([handOver.heldCount(), a.sent.length, held.map((each) => each.closed())]).to.deep.equal([2, 0, [false, false]]);
    handOver.serving(b.worker);
    expect(handOver.heldCount()).to.equal(0);
    await until(() => b.sent.length === 2, 'both sent to b');
    expect(b.sent.map(({ message, socket }) => [message.id, socket instanceof net.Socket])).to.deep.equal([
      [1, true],
      [2, true],
    ]);
    // New ones go straight to b.
    await connect(b);
    expect([handOver.heldCount(), b.sent.length]).to.deep.equal([0, 3]);
  });

  it('closes a held connection once no worker came within the hold time, and closes at once those past the most it holds', async function () {
    const started = Date.now();
    const held = [await connectHeld(), await connectHeld(), await connectHeld()];
    // The fourth: three held already.
    const past = await connectHeld();
    await until(() => past.closed(), 'the fourth closed');
    expect([handOver.heldCount(), held.map((each) => each.closed())]).to.deep.equal([3, [false, false, false]]);
    await until(() => held.every((each) => each.closed()), 'the held ones closed');
    expect(Date.now() - started, 'closed after the hold time').to.be.at.least(1_000);
    const closed = (why: string) => unserved.filter((each) => each.why === why).reduce((sum, each) => sum + each.closed, 0);
    expect([handOver.heldCount(), closed('full'), closed('timeout')]).to.deep.equal([0, 1, 3]);
  });
});
