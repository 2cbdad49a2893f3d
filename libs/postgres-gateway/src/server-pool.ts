// The pooled endpoint's server connections: one pool per (server, physical database, login role),
// each opened by the gateway itself with the ClientKey a client of that role proved (scram-keys.ts),
// lent to one client at a time for a transaction and given back at ReadyForQuery 'I'. A client that
// finds every connection lent waits in a queue, for a bounded time; idle connections close after a while.
import { once } from 'node:events';
import net from 'node:net';
import { parseBackendMessage } from './backend-parser.js';
import type { Backend } from './backends.js';
import { ByteReader } from './byte-reader.js';
import { sendCancel } from './cancel-request.js';
import { BackendType } from './message-types.js';
import { MAX_BACKEND_HANDSHAKE_MESSAGE, PROTOCOL_3_0, TERMINATE, readBackendKeyData, saslInitialResponse, saslResponse, startupMessage } from './protocol.js';
import { StatementNames } from './pooled-statements.js';
import { poolSize, type PoolSizing } from './pool-size.js';
import { ScramClient, type ScramVerifier } from './scram-keys.js';
import { SCRAM_MECHANISM } from './scram-messages.js';

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

/** What opens a pool's connections: where, as whom, and the keys a client of the role proved. */
export interface PoolLogin {
  backend: Backend;
  physicalName: string;
  role: string;
  verifier: ScramVerifier;
  clientKey: Buffer;
  /** Sessions the login may hold on its server (ConnectionRoute's, or its cluster's catalog); null: none known. */
  connectionLimit: number | null;
}

/** One pool's settings: its own size, in server connections at most. */
type OnePoolSettings = Omit<PoolSettings, keyof PoolSizing> & { size: number };

/** No server connection came free within the pool's wait. */
export class PoolWaitExpired extends Error {}

/** Who reads a lent connection's server messages now: the client holding it, or a login's exchange. */
export interface ServerListener {
  data(chunk: Buffer): void;
  /** The server closed the connection. */
  closed(): void;
}

/** One server session of a pool. */
export class ServerConnection {
  /** Its reader while lent; what the server sends while it is idle in the pool is dropped. */
  listener: ServerListener | null = null;
  /** The client whose session state (settings, tenant) it carries now; null: none (fresh). */
  owner: object | null = null;
  /** The settings it carries (pooled-settings.ts), by name. */
  applied: ReadonlyMap<string, string> = new Map();
  /** It ran SQL that may have left more on the session than those settings: the next hand-over resets it in full. */
  dirty = false;
  /** The gateway's names of the prepared statements it holds, oldest use first (an LRU). */
  readonly prepared = new Map<string, true>();
  /** It ran SQL-level PREPARE: the next hand-over deallocates everything. */
  sqlPrepared = false;
  /** When it was last given back (Date.now()): the pool's reaper closes it after the idle time. */
  idleSince = 0;
  closed = false;
  /** Cancel requests on their way to its server: it is lent to no one else until they have arrived. */
  cancelling = 0;
  /** Given back while a cancel was on its way: back in the pool once it has arrived. */
  releaseAfterCancel = false;

  constructor(
    readonly socket: net.Socket,
    readonly parameters: Map<string, string>,
    readonly processId: number,
    readonly secretKey: Buffer,
    /** Bytes the server sent past its first ReadyForQuery (none, normally). */
    readonly rest: Buffer,
  ) {}

  /** Marks `name` used now; answers the names evicted to keep at most `max`. */
  touch(name: string, max: number): string[] {
    this.prepared.delete(name);
    this.prepared.set(name, true);
    const evicted: string[] = [];
    for (const oldest of this.prepared.keys()) {
      if (this.prepared.size <= max) break;
      this.prepared.delete(oldest);
      evicted.push(oldest);
    }
    return evicted;
  }
}

interface Waiter {
  resolve(connection: ServerConnection): void;
  reject(error: Error): void;
  /** When its wait ends (Date.now()); the queue is in this order. */
  due: number;
}

/** How often a pool with waiters looks for one whose wait has ended: one timer per pool, not one per wait. */
const WAIT_SWEEP_MS = 50;

/**
 * How often a pool looks for connections idle past their time: a tenth of it, within bounds. One timer
 * per pool rather than one per release: a connection is given back at every transaction's end.
 */
const reapEvery = (idleMs: number): number => Math.min(5_000, Math.max(50, Math.floor(idleMs / 10)));

export class ServerPool {
  private readonly idle: ServerConnection[] = [];
  private readonly waiters: Waiter[] = [];
  /** Connections open or opening. */
  private count = 0;
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

  get size(): number {
    return this.count;
  }

  get waitMs(): number {
    return this.settings.waitMs;
  }

  /** An idle connection, the one given back last (its server's caches are the warmest), or null. */
  take(): ServerConnection | null {
    return this.idle.pop() ?? null;
  }

  /** A connection for one transaction: an idle one, a new one while the pool has room, or the next given back. */
  acquire(): Promise<ServerConnection> {
    const connection = this.idle.pop();
    if (connection) return Promise.resolve(connection);
    const waited = new Promise<ServerConnection>((resolve, reject) => {
      this.waiters.push({ resolve, reject, due: Date.now() + this.settings.waitMs });
    });
    this.sweeper ??= setInterval(() => this.sweep(), Math.min(WAIT_SWEEP_MS, this.settings.waitMs));
    if (this.count < this.settings.size) this.grow();
    return waited;
  }

  /** Refuses the waiters whose wait has ended; the sweep stops with the queue. */
  private sweep(): void {
    const now = Date.now();
    while (this.waiters.length > 0 && this.waiters[0].due <= now) {
      this.waiters.shift()!.reject(new PoolWaitExpired(`no server connection was free within ${this.settings.waitMs} ms`));
    }
    if (this.waiters.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /** Gives a connection back at the end of a transaction: to the first waiter, or to the idle ones. */
  release(connection: ServerConnection): void {
    if (connection.closed) return;
    // A cancel meant for the last client's query must not reach the next client's.
    if (connection.cancelling > 0) {
      connection.releaseAfterCancel = true;
      return;
    }
    if (this.closing) return this.discard(connection);
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(connection);
      return;
    }
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
    if (this.count === 0 && this.reaper) {
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
      if (connection.cancelling === 0 && connection.releaseAfterCancel) {
        connection.releaseAfterCancel = false;
        this.release(connection);
      }
    }
  }

  /** Closes a connection whose state cannot be trusted (the client left mid-transaction, the server failed). */
  discard(connection: ServerConnection, midAnswer = false): void {
    if (connection.closed) return;
    connection.closed = true;
    const at = this.idle.indexOf(connection);
    if (at >= 0) this.idle.splice(at, 1);
    this.count--;
    // Mid-answer, a Terminate would be read only once the statement ended (a long COPY or result
    // running on for nobody, read and dropped): the statement is cancelled (one that writes nothing
    // would not see the cut) and the connection cut.
    if (midAnswer) {
      sendCancel(this.login.backend, connection.processId, connection.secretKey).catch(this.onFailure);
      connection.socket.destroy();
    } else if (!connection.socket.destroyed) connection.socket.end(TERMINATE);
    // A waiter whose connection never came would otherwise wait out its deadline with room to open one.
    if (this.waiters.length > 0 && this.count < this.settings.size) this.grow();
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
    this.count++;
    openServerConnection(this.login).then(
      (connection) => {
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
        this.count--;
        this.onFailure(error);
        // Everyone waiting hears of it rather than wait out the deadline.
        for (const waiter of this.waiters.splice(0)) waiter.reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }
}

/** Opens a server session as the pool's role, logging in with SCRAM from the proven ClientKey. */
export async function openServerConnection(login: PoolLogin): Promise<ServerConnection> {
  const socket = net.connect({ host: login.backend.host, port: login.backend.port, noDelay: true });
  try {
    await once(socket, 'connect');
    socket.write(
      startupMessage(
        [
          ['user', login.role],
          ['database', login.physicalName],
        ],
        PROTOCOL_3_0,
      ),
    );
    const reader = new ByteReader(socket);
    const scram = new ScramClient(login.clientKey, login.verifier);
    const parameters = new Map<string, string>();
    let key: { processId: number; secretKey: Buffer } = { processId: 0, secretKey: Buffer.alloc(0) };
    for (;;) {
      const { raw } = await reader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
      if (raw[0] === BackendType.BackendKeyData) {
        key = readBackendKeyData(raw);
        continue;
      }
      const message = parseBackendMessage(raw) as unknown as { name: string; data?: string; mechanisms?: string[]; parameterName?: string; parameterValue?: string; message?: string; code?: string };
      switch (message.name) {
        case 'authenticationSASL':
          if (!message.mechanisms?.includes(SCRAM_MECHANISM)) throw new Error(`the server offered ${message.mechanisms?.join(', ')}`);
          socket.write(saslInitialResponse(SCRAM_MECHANISM, scram.first()));
          break;
        case 'authenticationSASLContinue':
          socket.write(saslResponse(scram.final(message.data ?? '')));
          break;
        case 'authenticationSASLFinal':
          scram.checkServerFinal(message.data ?? '');
          break;
        case 'authenticationOk':
        case 'notice':
          break;
        case 'parameterStatus':
          parameters.set(message.parameterName!, message.parameterValue!);
          break;
        case 'error':
          throw new Error(`the server refused the pool's login: ${message.code} ${message.message}`);
        case 'readyForQuery':
          return new ServerConnection(socket, parameters, key.processId, key.secretKey, reader.detach());
        default:
          throw new Error(`unexpected ${message.name} while a pool's connection logged in`);
      }
    }
  } catch (error) {
    socket.destroy();
    throw error;
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

  close(): void {
    for (const pool of this.pools.values()) pool.close();
  }
}
