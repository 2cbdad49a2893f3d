// The pooled endpoint's server connections: one pool per (server, physical database, login role),
// each opened by the gateway itself with the ClientKey a client of that role proved (scram-keys.ts),
// lent to one client at a time for a transaction and given back at ReadyForQuery 'I'. A client that
// finds every connection lent waits in a queue, for a bounded time; idle connections close after a while.
import { sendCancel } from './cancel-request.js';
import { TERMINATE } from './protocol.js';
import { openServerConnection, type PoolLogin, type ServerConnection, type ServerConnectionState } from './server-connection.js';
import { StatementNames } from './statement-names.js';
import { poolSize, type PoolSizing } from './pool-size.js';

export type { PoolLogin, ServerConnection, ServerConnectionState, ServerListener } from './server-connection.js';

/** How pools are sized and timed (README "Pooled endpoint"); each pool's size follows its login's connection limit (pool-size.ts). */
export interface PoolSettings extends PoolSizing {
  /** How long a client waits for a server connection before it is refused (GATEWAY_POOL_WAIT_MS). */
  waitMs: number;
  /** How long a server connection stays open unused (GATEWAY_POOL_IDLE_MS). */
  idleMs: number;
  /** Named prepared statements kept per server connection (GATEWAY_POOL_PREPARED_STATEMENTS). */
  preparedStatements: number;
}

export const DEFAULT_POOL_SETTINGS: PoolSettings = { size: null, workers: 1, waitMs: 5_000, idleMs: 60_000, preparedStatements: 200 };

/** One pool's settings: its own size, in server connections at most. */
type OnePoolSettings = Omit<PoolSettings, keyof PoolSizing> & { size: number };

interface Waiter {
  resolve(connection: ServerConnection): void;
  reject(error: Error): void;
  /** When its wait ends (Date.now()); the queue is in this order. */
  due: number;
}

/** No server connection came free within the pool's wait: every one was in use by other clients. */
export class PoolWaitExpired extends Error {
  constructor(
    readonly waitMs: number,
    readonly size: number,
  ) {
    super(`no server connection was free within ${waitMs} ms`);
  }
}

/** The pool could not open a server connection: the server refused it, or did not answer within the pool's wait. */
export class ServerUnreachable extends Error {
  constructor(
    readonly waitMs: number,
    readonly reason: unknown,
  ) {
    super(`no server connection could be opened within ${waitMs} ms`);
  }
}

/** How often a pool with waiters looks for one whose wait has ended: one timer per pool, not one per wait. */
const WAIT_SWEEP_MS = 50;

/**
 * How often a pool looks for connections idle past their time: a tenth of it, within bounds. One timer
 * per pool rather than one per release: a connection is given back at every transaction's end.
 */
const reapEvery = (idleMs: number): number => Math.min(5_000, Math.max(50, Math.floor(idleMs / 10)));

export class ServerPool {
  /** Every open connection, in whatever state; the counts below are read from it. */
  private readonly open = new Set<ServerConnection>();
  /** The idle ones, the one given back last at the end. */
  private readonly idle: ServerConnection[] = [];
  /** Logins of new connections under way. */
  private readonly opening = new Set<Promise<void>>();
  private readonly waiters: Waiter[] = [];
  /** The gateway stops: connections given back are closed. */
  private closing = false;
  private sweeper: NodeJS.Timeout | null = null;
  private reaper: NodeJS.Timeout | null = null;
  /** The parameters the server reported to the pool's first connection: what pooled clients are told at login. */
  parameters: Map<string, string> | null = null;
  /** The pool's names of its clients' prepared statements (pooled-statements.ts). */
  readonly statementNames = new StatementNames();

  constructor(
    public login: PoolLogin,
    /** Replaced when the login's connection limit changes (ServerPools.poolFor): new connections follow it. */
    public settings: OnePoolSettings,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Connections open or opening. */
  get size(): number {
    return this.open.size + this.opening.size;
  }

  /** Open connections in `state`. */
  count(state: ServerConnectionState): number {
    if (state === 'idle') return this.idle.length;
    let n = 0;
    for (const connection of this.open) if (connection.state === state) n++;
    return n;
  }

  get waitMs(): number {
    return this.settings.waitMs;
  }

  /** An idle connection, the one given back last (its server's caches are the warmest), or null. */
  take(): ServerConnection | null {
    const connection = this.idle.pop() ?? null;
    if (connection) connection.state = 'lent';
    return connection;
  }

  /** A connection for one transaction: an idle one, a new one while the pool has room, or the next given back. */
  acquire(): Promise<ServerConnection> {
    const connection = this.take();
    if (connection) return Promise.resolve(connection);
    const waited = new Promise<ServerConnection>((resolve, reject) => {
      this.waiters.push({ resolve, reject, due: Date.now() + this.settings.waitMs });
    });
    this.sweeper ??= setInterval(() => this.sweep(), Math.min(WAIT_SWEEP_MS, this.settings.waitMs));
    if (this.size < this.settings.size) this.grow();
    return waited;
  }

  /**
   * Refuses the waiters whose wait has ended: the pool is full when every connection was in use (53300);
   * while one is still being opened, the server is not answering its logins (57P03). The sweep stops with the queue.
   */
  private sweep(): void {
    const now = Date.now();
    while (this.waiters.length > 0 && this.waiters[0].due <= now) {
      const waiter = this.waiters.shift()!;
      waiter.reject(this.opening.size > 0 ? new ServerUnreachable(this.settings.waitMs, null) : new PoolWaitExpired(this.settings.waitMs, this.settings.size));
    }
    if (this.waiters.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /** The client holding `connection` keeps it for the rest of its session (it LISTENs). */
  pin(connection: ServerConnection): void {
    if (connection.state === 'lent') connection.state = 'pinned';
  }

  /** Gives a connection back at the end of a transaction (or of its pinned client): to the first waiter, or to the idle ones. */
  release(connection: ServerConnection): void {
    if (connection.state === 'closed') return;
    connection.state = 'lent';
    // A cancel meant for the last client's query must not reach the next client's: given back once it has arrived.
    if (connection.cancelling > 0) return;
    if (this.closing) return this.discard(connection);
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(connection);
      return;
    }
    connection.state = 'idle';
    connection.listener = null;
    connection.idleSince = Date.now();
    this.idle.push(connection);
    if (!this.reaper) {
      this.reaper = setInterval(() => this.reap(), reapEvery(this.settings.idleMs));
      this.reaper.unref();
    }
  }

  /** Closes the connections idle for longer than the idle time (the oldest are first in the list); the timer stops with the last connection. */
  private reap(): void {
    const due = Date.now() - this.settings.idleMs;
    while (this.idle.length > 0 && this.idle[0].idleSince <= due) this.discard(this.idle[0]);
    if (this.size === 0 && this.reaper) {
      clearInterval(this.reaper);
      this.reaper = null;
    }
  }

  /** Cancels what `connection` runs now (a client's cancel request); it goes to no other client until the request has reached the server. */
  async cancel(connection: ServerConnection): Promise<void> {
    connection.cancelling++;
    try {
      await sendCancel(this.login.backend, connection.processId, connection.secretKey);
    } finally {
      connection.cancelling--;
      // Given back meanwhile (lent, with no listener of a client): back in the pool now.
      if (connection.cancelling === 0 && connection.state === 'lent' && connection.listener === null) this.release(connection);
    }
  }

  /** Closes a connection whose state cannot be trusted (the client left mid-transaction, the server failed, a hand-over failed). */
  discard(connection: ServerConnection, midAnswer = false): void {
    if (connection.state === 'closed') return;
    if (connection.state === 'idle') this.idle.splice(this.idle.indexOf(connection), 1);
    connection.state = 'closed';
    connection.listener = null;
    this.open.delete(connection);
    // Mid-answer, a Terminate would be read only once the statement ended (a long COPY or result
    // running on for nobody, read and dropped): the statement is cancelled (one that writes nothing
    // would not see the cut) and the connection cut.
    if (midAnswer) {
      sendCancel(this.login.backend, connection.processId, connection.secretKey).catch(this.onFailure);
      connection.socket.destroy();
    } else if (!connection.socket.destroyed) connection.socket.end(TERMINATE);
    // A waiter whose connection never came would otherwise wait out its deadline with room to open one.
    if (this.waiters.length > 0 && this.size < this.settings.size) this.grow();
  }

  /** Closes every connection (the gateway stops). */
  close(): void {
    this.closing = true;
    if (this.sweeper) clearInterval(this.sweeper);
    if (this.reaper) clearInterval(this.reaper);
    this.sweeper = null;
    this.reaper = null;
    for (const connection of [...this.idle]) this.discard(connection);
  }

  private grow(): void {
    const opening: Promise<void> = openServerConnection(this.login, this.settings.waitMs).then(
      (connection) => {
        this.opening.delete(opening);
        this.open.add(connection);
        this.parameters ??= connection.parameters;
        // One reader for the connection's life, handing each chunk to whoever holds it: no listener is added or removed per transaction.
        connection.socket.on('data', (chunk: Buffer) => connection.listener?.data(chunk));
        connection.socket.on('close', () => {
          connection.listener?.closed();
          this.discard(connection);
        });
        connection.socket.on('error', () => this.discard(connection));
        // Fresh from its login it comes paused (ByteReader.detach); idle, it reads on and drops what comes (a notice, a FATAL before close).
        connection.socket.resume();
        this.release(connection);
      },
      (error: unknown) => {
        this.opening.delete(opening);
        this.onFailure(error);
        // Everyone waiting hears of it rather than wait out the deadline.
        for (const waiter of this.waiters.splice(0)) waiter.reject(new ServerUnreachable(this.settings.waitMs, error));
      },
    );
    this.opening.add(opening);
  }
}

/** Every pool of the gateway, by (server, physical database, role). */
export class ServerPools {
  private readonly pools = new Map<string, ServerPool>();

  constructor(
    readonly settings: PoolSettings,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /**
   * The pool for a login, made on first use; a pool whose role's verifier changed takes the new keys,
   * one whose connection limit changed its new size (it opens no more past it; those open stay until
   * unused for the idle time).
   */
  poolFor(login: PoolLogin): ServerPool {
    const key = `${login.backend.host}:${login.backend.port}/${login.physicalName}/${login.role}`;
    const size = poolSize(this.settings, login.connectionLimit);
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new ServerPool(login, { ...this.settings, size }, this.onFailure);
      this.pools.set(key, pool);
      return pool;
    }
    if (!pool.login.verifier.storedKey.equals(login.verifier.storedKey) || pool.login.connectionLimit !== login.connectionLimit) pool.login = login;
    if (pool.settings.size !== size) pool.settings = { ...pool.settings, size };
    return pool;
  }

  /** Server connections open now, over every pool. */
  get connections(): number {
    let total = 0;
    for (const pool of this.pools.values()) total += pool.size;
    return total;
  }

  /** Open server connections in `state`, over every pool. */
  count(state: ServerConnectionState): number {
    let total = 0;
    for (const pool of this.pools.values()) total += pool.count(state);
    return total;
  }

  close(): void {
    for (const pool of this.pools.values()) pool.close();
  }
}
