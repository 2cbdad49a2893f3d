import type { Worker } from 'node:cluster';
import net from 'node:net';

/** The port a client connected to: the session endpoint, or the pooled one. */
export type Endpoint = 'session' | 'pooled';

/** The supervisor's word to a worker, with the client's connection attached. */
export interface ConnectionMessage {
  kind: 'connection';
  id: number;
  endpoint: Endpoint;
}

/** How long a worker has to take a connection before the supervisor closes it (a handle lost on the way, a worker stuck). */
export const TAKE_TIMEOUT_MS = 10_000;

/** A connection sent to a worker and not yet taken: the supervisor's copy, closed when the worker has not taken it in time. */
interface Untaken {
  socket: net.Socket;
  timer: NodeJS.Timeout;
}

/**
 * The supervisor's listening sockets: it accepts every client connection and hands it to the next
 * serving worker in turn, which says when it has it (`taken`).
 *
 * Not Node's cluster sharing, which does the same but holds a connection it handed to a worker that
 * dies before taking it for ever (its IPC channel waits for an acknowledgement that never comes):
 * measured, 31 of 800 connections opened just after a worker was killed hung, client and supervisor
 * both keeping them open. Here the supervisor keeps its copy of each connection until the worker
 * took it and closes it then (the worker's copy goes on: closing one of two descriptors sends
 * nothing), or closes it when the worker dies first or has not taken it within TAKE_TIMEOUT_MS:
 * that client sees its connection close, and can connect again. A worker that is stopping, or whose
 * channel is gone, gets no more; a connection whose sending failed goes to the next worker.
 * With no worker serving, a connection is accepted and closed at once (`/healthz` says 503 then).
 */
export class ConnectionHandOver {
  private readonly servers: net.Server[] = [];
  /** Serving workers, in the order they get connections. */
  private readonly workers: Worker[] = [];
  private turn = 0;
  private handed = 0;
  /** Per worker, connections sent and not yet taken, by id. */
  private readonly untaken = new Map<Worker, Map<number, Untaken>>();
  private closed = false;

  constructor(private readonly acceptFailed: (error: Error) => void) {}

  /** Listens on `port` (0 picks a free one) for `endpoint`; answers where. */
  async listen(host: string, port: number, endpoint: Endpoint): Promise<net.AddressInfo> {
    // Paused: the supervisor never reads a byte of a connection; the worker it goes to does.
    const server = net.createServer({ pauseOnConnect: true, noDelay: true }, (socket) => {
      // A reset before the worker has it: the worker's copy sees it too.
      socket.on('error', () => socket.destroy());
      this.handOver(socket, endpoint);
    });
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        // Past listening, an error is an accept that failed (EMFILE, say): that connection only.
        server.on('error', this.acceptFailed);
        resolve();
      });
    });
    return server.address() as net.AddressInfo;
  }

  /** `worker` serves from now on. */
  serving(worker: Worker): void {
    if (this.untaken.has(worker)) return;
    this.untaken.set(worker, new Map());
    this.workers.push(worker);
  }

  /** `worker` gets no more connections (it is stopping); those on their way to it are still its own. */
  retire(worker: Worker): void {
    const at = this.workers.indexOf(worker);
    if (at >= 0) this.workers.splice(at, 1);
  }

  /** `worker` took connection `id`: the supervisor's copy closes. */
  taken(worker: Worker, id: number): void {
    const waiting = this.untaken.get(worker);
    const entry = waiting?.get(id);
    if (!entry) return;
    waiting!.delete(id);
    clearTimeout(entry.timer);
    entry.socket.destroy();
  }

  /** `worker` is gone: it gets no more connections, and those it had not taken close. */
  gone(worker: Worker): void {
    this.retire(worker);
    for (const { socket, timer } of this.untaken.get(worker)?.values() ?? []) {
      clearTimeout(timer);
      socket.destroy();
    }
    this.untaken.delete(worker);
  }

  /** Stops listening (at once: it does not wait for the connections handed over to end). */
  close(): void {
    this.closed = true;
    for (const server of this.servers) server.close();
    for (const worker of [...this.untaken.keys()]) this.gone(worker);
  }

  private handOver(socket: net.Socket, endpoint: Endpoint): void {
    // A worker whose channel closed is out of the turn before its exit is seen.
    for (let i = this.workers.length - 1; i >= 0; i--) if (!this.workers[i].isConnected()) this.workers.splice(i, 1);
    if (this.closed || this.workers.length === 0) {
      socket.destroy();
      return;
    }
    const worker = this.workers[this.turn++ % this.workers.length];
    const id = ++this.handed;
    const waiting = this.untaken.get(worker)!;
    const timer = setTimeout(() => {
      if (waiting.delete(id)) socket.destroy();
    }, TAKE_TIMEOUT_MS);
    timer.unref();
    waiting.set(id, { socket, timer });
    const message: ConnectionMessage = { kind: 'connection', id, endpoint };
    // keepOpen: the supervisor's copy stays open until `taken`, `gone` or the timeout (see above).
    worker.send(message, socket, { keepOpen: true }, (error) => {
      if (!error || !waiting.delete(id)) return;
      // The channel is gone (its worker is dying): the connection, still whole here, goes to another.
      clearTimeout(timer);
      this.retire(worker);
      this.handOver(socket, endpoint);
    });
  }
}
