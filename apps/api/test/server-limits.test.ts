import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform } from './support/platform.js';

/** What the server sends until it closes the connection, and when it closed, in ms from `since`. */
async function untilClosed(socket: net.Socket, since: number): Promise<{ text: string; ms: number }> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  await once(socket, 'close');
  return { text: Buffer.concat(chunks).toString('latin1'), ms: Date.now() - since };
}

// Issue 11, finding 4: a slow body held a connection for Node's 300 s, and connections had no cap.
describe('HTTP server limits', function () {
  let api: RunningApi;
  let port: number;

  before(async function () {
    const p = await platform();
    // An API of its own with tight limits, over the shared test platform's control plane.
    api = await startApi(
      loadApiConfig({ ...p.env, API_PORT: '0', HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_KEEP_ALIVE_TIMEOUT_MS: '500', HTTP_MAX_CONNECTIONS: '3' }),
    );
    port = Number(new URL(api.url).port);
  });

  after(async function () {
    this.timeout(90_000);
    await api?.close();
  });

  async function connect(): Promise<net.Socket> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    return socket;
  }

  it('answers a body that trickles in with 408 and closes the connection once the request time is up', async function () {
    const socket = await connect();
    const started = Date.now();
    // A user's sign-in needs no token, so its body is read (a route that needs one answers 401 first).
    socket.write('POST /workspaces/nowhere/databases/none/users/login HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{');
    const trickle = setInterval(() => socket.write(' '), 200);
    try {
      const { text, ms } = await untilClosed(socket, started);
      expect(text).to.match(/^HTTP\/1\.1 408 /);
      // Due at 1.5 s; the server looks once a second.
      expect(ms).to.be.within(1_400, 4_000);
    } finally {
      clearInterval(trickle);
    }
  });

  it('closes a connection whose headers never end once the headers time is up', async function () {
    const socket = await connect();
    const started = Date.now();
    socket.write('GET /healthz HTTP/1.1\r\nHost: api.test\r\n');
    const { ms } = await untilClosed(socket, started);
    expect(ms).to.be.within(900, 3_500);
  });

  it('closes an idle keep-alive connection after its time', async function () {
    const socket = await connect();
    socket.write('GET /healthz HTTP/1.1\r\nHost: api.test\r\n\r\n');
    const started = Date.now();
    const { text, ms } = await untilClosed(socket, started);
    expect(text).to.match(/^HTTP\/1\.1 200 /);
    expect(ms).to.be.within(400, 3_000);
  });

  it('holds three connections at most and closes the fourth at once; a freed place serves again', async function () {
    const held = [await connect(), await connect(), await connect()];
    // Each held connection has begun a request, so none is idle and none times out before the check.
    for (const socket of held) socket.write('GET /healthz HTTP/1.1\r\nHost: api.test\r\n');
    const extra = await connect();
    const { text, ms } = await untilClosed(extra, Date.now());
    expect(text).to.equal('');
    expect(ms).to.be.below(500);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const response = await fetch(`${api.url}/healthz`);
    expect(response.status).to.equal(200);
  });
});
