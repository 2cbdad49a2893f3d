import type { Worker } from 'node:cluster';
import net from 'node:net';
import type { GatewayEndpoint as Endpoint } from '@platform/postgres-gateway';

export type { Endpoint };

/** The supervisor's word to a worker, with the client's connection attached. */
export interface ConnectionMessage {
  kind: 'connection';
  id: number;
  endpoint: Endpoint;
  /** When the supervisor accepted the connection (Date.now()): the login's deadline counts from then. */
  acceptedAt: number;
}

/** How long a worker with connections waiting may go without taking one before it counts as stuck. */
export const TAKE_TIMEOUT_MS = 10_000;
const WATCH_EVERY_MS = 1_000;
/** A watch this late (at least) means the supervisor itself was held up. */
const LATE_WATCH_MS = 2_000;

export interface HandOverEvents {
  /** An accept failed after listening (EMFILE, say): that connection only. */
  acceptFailed(error: Error): void;
  /** `worker` took nothing for TAKE_TIMEOUT_MS: out of the turn until it takes one, `closed` of its connections closed. */
  stuck(worker: Worker, closed: number): void;
  /** `closed` connections closed unserved: no worker came into the turn within their hold time (`why`: 'timeout'), or too many were held ('full'). */
  unserved(closed: number, why: 'timeout' | 'full'): void;
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
 * nothing), or closes it when the worker dies first: that client sees its connection close, and can
 * connect again. Node sends a worker one connection at a time, the next once the last arrived: a
 * worker that takes none for TAKE_TIMEOUT_MS while some wait (its loop stuck) leaves the turn until
 * it takes one again, and those waiting behind the one in its channel are closed (that one is the
 * kernel's until the worker reads it or dies). A worker that is stopping, or whose channel is gone,
 * gets no more; a connection whose sending failed goes to the next worker. With no worker in the turn
 * (every one restarting, stopping or stuck), a connection is held, unread, until one is (a replacement
 * serves), for `hold.timeoutMs` from its accept at most (the login's own deadline, which counts from
 * the accept) and `hold.max` connections at most (`/healthz` says 503 then): a client that connects
 * while the last worker restarts waits instead of being refused.
 */
export class ConnectionHandOver {
  private readonly servers: net.Server[] = [];
  /** Serving workers, in the order they get connections. */
  private readonly workers: Worker[] = [];
  private turn = 0;
  private handed = 0;
  /** Per worker, connections sent and not yet taken, oldest first, by id. */
  private readonly untaken = new Map<Worker, Map<number, net.Socket>>();
  /** Per worker, when it last took a connection, or was given one with none waiting. */
  private readonly progress = new Map<Worker, number>();
  /** Out of the turn for taking nothing; back in it at its next `taken`. */
  private readonly stuck = new Set<Worker>();
  /** Workers sent a probe (a connection message without a connection) since they last took one. */
  private readonly probed = new Set<Worker>();
  /** Connections accepted while no worker was in the turn, in the order they came to wait. */
  private readonly held: { socket: net.Socket; endpoint: Endpoint; acceptedAt: number }[] = [];
  /** Connections closed at once since the last watch, `hold.max` being held already (reported by the watch: one line, not one per connection). */
  private closedFull = 0;
  private readonly watch: NodeJS.Timeout;
  private watchedAt = Date.now();
  private closed = false;

  private readonly takeTimeoutMs: number;
  private readonly watchEveryMs: number;

  /**
   * `hold`: how many connections, and for how long from their accept, are held at most while no
   * worker is in the turn. `timing`: tests only, shorter than TAKE_TIMEOUT_MS and the watch's second.
   */
  constructor(
    private readonly events: HandOverEvents,
    private readonly hold: { max: number; timeoutMs: number },
    timing: { takeTimeoutMs?: number; watchEveryMs?: number } = {},
  ) {
    this.takeTimeoutMs = timing.takeTimeoutMs ?? TAKE_TIMEOUT_MS;
    this.watchEveryMs = timing.watchEveryMs ?? WATCH_EVERY_MS;
    this.watch = setInterval(() => this.watchWorkers(), this.watchEveryMs);
    this.watch.unref();
  }

  /** Listens on `port` (0 picks a free one) for `endpoint`; answers where. */
  async listen(host: string, port: number, endpoint: Endpoint): Promise<net.AddressInfo> {
    // Paused: the supervisor never reads a byte of a connection; the worker it goes to does.
    const server = net.createServer({ pauseOnConnect: true, noDelay: true }, (socket) => {
      // A reset before the worker has it: the worker's copy sees it too.
      socket.on('error', () => socket.destroy());
      this.handOver(socket, endpoint, Date.now());
    });
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        server.on('error', (error) => this.events.acceptFailed(error));
        resolve();
      });
    });
    return server.address() as net.AddressInfo;
  }

  /** `worker` serves from now on: it gets the connections held meanwhile too. */
  serving(worker: Worker): void {
    if (this.untaken.has(worker)) return;
    this.untaken.set(worker, new Map());
    this.enterTurn(worker);
  }

  /** Connections held now, waiting for a worker in the turn. */
  heldCount(): number {
    return this.held.length;
  }

  /** Whether `worker` gets connections now (serving, not stopping, not stuck). */
  inTurn(worker: Worker): boolean {
    return this.workers.includes(worker);
  }

  /** `worker` gets no more connections (it is stopping); those on their way to it are still its own. */
  retire(worker: Worker): void {
    this.leaveTurn(worker);
    this.stuck.delete(worker);
  }

  /**
   * `worker` took connection `id` (or answered a probe): the supervisor's copy closes. Its channel keeps
   * order, so the ones sent before it and still here never reached it (a handle the worker could not
   * receive is dropped without a word): they close too. A stuck worker is back in the turn.
   */
  taken(worker: Worker, id: number): void {
    const waiting = this.untaken.get(worker);
    if (!waiting) return;
    this.progress.set(worker, Date.now());
    this.probed.delete(worker);
    for (const [sent, socket] of waiting) {
      if (sent > id) break;
      waiting.delete(sent);
      socket.destroy();
    }
    if (this.stuck.delete(worker) && worker.isConnected()) this.enterTurn(worker);
  }

  /** `worker` is gone: it gets no more connections, and those it had not taken close. */
  gone(worker: Worker): void {
    this.retire(worker);
    this.probed.delete(worker);
    const waiting = this.untaken.get(worker);
    for (const socket of waiting?.values() ?? []) socket.destroy();
    waiting?.clear();
    this.untaken.delete(worker);
    this.progress.delete(worker);
  }

  /** Stops listening (at once: it does not wait for the connections handed over to end). */
  close(): void {
    this.closed = true;
    clearInterval(this.watch);
    for (const server of this.servers) server.close();
    for (const worker of [...this.untaken.keys()]) this.gone(worker);
    for (const { socket } of this.held.splice(0)) socket.destroy();
  }

  /** `worker` gets connections, first those held while none did. */
  private enterTurn(worker: Worker): void {
    this.workers.push(worker);
    for (const { socket, endpoint, acceptedAt } of this.held.splice(0)) this.handOver(socket, endpoint, acceptedAt);
  }

  private leaveTurn(worker: Worker): void {
    const at = this.workers.indexOf(worker);
    if (at >= 0) this.workers.splice(at, 1);
  }

  private watchWorkers(): void {
    const now = Date.now();
    // The supervisor itself held up (its loop, the machine): the workers' answers may be waiting unread.
    const late = now - this.watchedAt > Math.max(2 * this.watchEveryMs, LATE_WATCH_MS);
    this.watchedAt = now;
    // Not in order of their accept: one whose sending failed came back.
    let expired = 0;
    for (let i = this.held.length - 1; i >= 0; i--) {
      if (now - this.held[i].acceptedAt < this.hold.timeoutMs) continue;
      this.held[i].socket.destroy();
      this.held.splice(i, 1);
      expired++;
    }
    if (expired > 0) this.events.unserved(expired, 'timeout');
    if (this.closedFull > 0) this.events.unserved(this.closedFull, 'full');
    this.closedFull = 0;
    for (const [worker, waiting] of this.untaken) {
      if (late) this.progress.set(worker, now);
      if (waiting.size === 0 || this.probed.has(worker) || now - (this.progress.get(worker) ?? now) < this.takeTimeoutMs) continue;
      if (this.inTurn(worker)) {
        this.leaveTurn(worker);
        this.stuck.add(worker);
      }
      // The oldest is in the worker's channel (or being written to it): closing it would free nothing,
      // and cutting a handle out of a write under way would stall the channel. The rest close.
      let closed = 0;
      for (const [id, socket] of [...waiting].slice(1)) {
        waiting.delete(id);
        socket.destroy();
        closed++;
      }
      this.events.stuck(worker, closed);
      // A probe behind them: a worker that answers it is not stuck (the oldest's handle was lost), and
      // is back in the turn; one that is answers it when it goes on.
      this.probed.add(worker);
      const probe: ConnectionMessage = { kind: 'connection', id: ++this.handed, endpoint: 'session', acceptedAt: now };
      worker.send(probe, undefined, {}, () => {});
    }
  }

  private handOver(socket: net.Socket, endpoint: Endpoint, acceptedAt: number): void {
    // A worker whose channel closed is out of the turn before its exit is seen.
    for (let i = this.workers.length - 1; i >= 0; i--) if (!this.workers[i].isConnected()) this.workers.splice(i, 1);
    if (this.closed) {
      socket.destroy();
      return;
    }
    if (this.workers.length === 0) {
      if (this.held.length < this.hold.max) this.held.push({ socket, endpoint, acceptedAt });
      else {
        socket.destroy();
        this.closedFull++;
      }
      return;
    }
    const worker = this.workers[this.turn++ % this.workers.length];
    const id = ++this.handed;
    const waiting = this.untaken.get(worker)!;
    if (waiting.size === 0) this.progress.set(worker, Date.now());
    waiting.set(id, socket);
    const message: ConnectionMessage = { kind: 'connection', id, endpoint, acceptedAt };
    // keepOpen: the supervisor's copy stays open until `taken` or `gone` (see above).
    worker.send(message, socket, { keepOpen: true }, (error) => {
      if (!error || !waiting.delete(id)) return;
      // The channel is gone (its worker is dying): the connection, still whole here, goes to another.
      this.retire(worker);
      this.handOver(socket, endpoint, acceptedAt);
    });
  }
}
