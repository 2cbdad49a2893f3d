// A pooled client after its login: its messages are framed, and the first one of a transaction takes
// a server connection from its pool; the connection goes back when the server's ReadyForQuery says
// 'I' with nothing of the client's still pending. A connection last used by another client is made
// this one's first (pooled-settings.ts), its answers swallowed. Named prepared statements are mapped
// to the pool's shared ones (pooled-statements.ts).
import type { Duplex } from 'node:stream';
import type { ConnectionContext } from './context.js';
import { errorResponse } from './protocol.js';
import { BackendType, TRANSACTION_IDLE } from './message-types.js';
import type { PooledClientState, TrackedChange } from './pooled-settings.js';
import { changesSession, handOver, trackedChange } from './pooled-settings.js';
import { PreparedStatements } from './pooled-statements.js';
import { noteParameter } from './pooled-parameters.js';
import type { QueryTracker } from './query-counters.js';
import { ProtocolViolation, Refusal, SqlState } from './refusals.js';
import { PoolWaitExpired, type ServerConnection, type ServerPool } from './server-pool.js';

const code = (letter: string): number => letter.charCodeAt(0);
const QUERY = code('Q');
const SYNC = code('S');
const FUNCTION_CALL = code('F');
const TERMINATE = code('X');
const COMMAND_COMPLETE = BackendType.CommandComplete;
const ERROR = BackendType.ErrorResponse;
const READY = BackendType.ReadyForQuery;
const PARAMETER_STATUS = code('S');
/** Client messages of the extended protocol: a connection is kept from the first to the Sync. */
const EXTENDED = new Set(['P', 'B', 'D', 'E', 'C', 'H'].map(code));
/** The longest message a pooled client may send (PostgreSQL's own limit is 1 GB; COPY data comes in many messages). */
const MAX_CLIENT_MESSAGE = 64 << 20;
/** What a client may send while it waits for a server connection before its socket is paused. */
const MAX_WAITING_BYTES = 1 << 20;
const READY_IDLE = Buffer.from([READY, 0, 0, 0, 5, TRANSACTION_IDLE]);
/** No bytes left over: one buffer for every session (each Buffer.alloc(0) is an object and an ArrayBuffer an idle client kept). */
const NO_BYTES = Buffer.alloc(0);

/** Splits `buffer` from `offset` into whole messages; answers those and where the rest starts. */
export function frames(buffer: Buffer, limit: number): { messages: Buffer[]; rest: number } {
  const messages: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 5) {
    const length = buffer.readInt32BE(offset + 1);
    if (length < 4 || length > limit) throw new ProtocolViolation(`invalid message length ${length}`);
    if (buffer.length - offset < 1 + length) break;
    messages.push(buffer.subarray(offset, offset + 1 + length));
    offset += 1 + length;
  }
  return { messages, rest: offset };
}

export class PooledSession {
  private connection: ServerConnection | null = null;
  private readonly waiting: Buffer[] = [];
  private acquiring = false;
  private clientRest: Buffer = NO_BYTES;
  private serverRest: Buffer = NO_BYTES;
  /** Extended-protocol messages went since the last Sync. */
  private extendedOpen = false;
  /** Hand-over queries sent whose ReadyForQuery (and everything before it) the client must not see. */
  private swallowed = 0;
  private status = TRANSACTION_IDLE;
  /** A tracked SET on its way, and whether it failed. */
  private pendingChange: TrackedChange | null = null;
  private changeFailed = false;
  private closed = false;
  /** The client's reading was paused while it waited for a server connection. */
  private pausedForWait = false;
  /** The gateway answered the client's last messages itself: a Sync now is answered too. */
  private answeredAlone = false;
  private readonly statements: PreparedStatements;
  // Bound methods, not arrow fields: tsx (keepNames) gives each named arrow of each instance its own
  // property dictionary, 256 bytes an idle client kept three times.
  private readonly onClientData = this.clientData.bind(this);
  private readonly onServerData = this.serverData.bind(this);
  private readonly onServerClose = this.serverClose.bind(this);

  constructor(
    private readonly client: Duplex,
    private readonly pool: ServerPool,
    private readonly state: PooledClientState,
    private readonly tracker: QueryTracker | null,
    private readonly context: Pick<ConnectionContext, 'clientStallMs' | 'log'>,
    preparedPerConnection: number,
  ) {
    this.statements = new PreparedStatements(pool.statementNames, preparedPerConnection);
  }

  start(clientRest: Buffer): void {
    this.client.on('data', this.onClientData);
    // One bound function for both (a named arrow would get a property dictionary of its own under tsx).
    const end = this.end.bind(this);
    this.client.on('close', end);
    this.client.on('error', end);
    if (clientRest.length > 0) this.onClientData(clientRest);
    this.client.resume();
  }

  private clientData(chunk: Buffer): void {
    if (this.closed) return;
    const buffer = this.clientRest.length === 0 ? chunk : Buffer.concat([this.clientRest, chunk]);
    let parsed: { messages: Buffer[]; rest: number };
    try {
      parsed = frames(buffer, MAX_CLIENT_MESSAGE);
    } catch (error) {
      this.refuse(error as Refusal);
      return;
    }
    this.clientRest = parsed.rest === buffer.length ? NO_BYTES : Buffer.from(buffer.subarray(parsed.rest));
    const out: Buffer[] = [];
    const toClient: Buffer[] = [];
    for (const message of parsed.messages) {
      if (message[0] === TERMINATE) {
        this.flush(out, toClient);
        this.end();
        return;
      }
      if (!this.connection) {
        if (this.waiting.length === 0 && !this.acquiring) {
          const answer = this.answerAlone(message);
          if (answer) {
            toClient.push(answer);
            continue;
          }
        }
        this.waiting.push(Buffer.from(message));
        if (this.acquiring && !this.pausedForWait && this.waiting.length > 64 && this.waiting.reduce((total, each) => total + each.length, 0) > MAX_WAITING_BYTES) {
          this.client.pause();
          this.pausedForWait = true;
        }
        continue;
      }
      this.send(message, out, toClient);
    }
    this.flush(out, toClient);
    if (!this.connection && this.waiting.length > 0 && !this.acquiring) this.acquire();
  }

  /**
   * The gateway's answer to a message that needs no server while the client holds none: a Parse or
   * Close (pooled-statements.ts), and the Sync after them (nothing is pending, no transaction is
   * open). Without it a client that prepares synchronously (libpq's PQprepare) would need a server
   * connection per Parse, outside any transaction: a pool whose connections all wait on such clients
   * would stall.
   */
  private answerAlone(message: Buffer): Buffer | null {
    if (message[0] === SYNC && this.answeredAlone) {
      this.answeredAlone = false;
      return READY_IDLE;
    }
    const answer = this.statements.answerAlone(message);
    this.answeredAlone = answer !== null;
    return answer;
  }

  /** One client message for the server (into `out`), with the gateway's own answers due now. */
  private send(message: Buffer, out: Buffer[], toClient: Buffer[]): void {
    const type = message[0];
    this.tracker?.fromClient(type);
    if (type === QUERY) {
      const sql = message.toString('utf8', 5, message.length - 1);
      if (changesSession(sql)) this.connection!.dirty = true;
      if (this.status === TRANSACTION_IDLE && this.statements.pending === 0 && !this.extendedOpen) {
        this.pendingChange = trackedChange(sql);
        this.changeFailed = false;
      }
    }
    if (type === SYNC || type === QUERY || type === FUNCTION_CALL) this.extendedOpen = false;
    else if (EXTENDED.has(type)) this.extendedOpen = true;
    this.statements.fromClient(message, this.connection!, out, toClient);
  }

  private flush(out: Buffer[], toClient: Buffer[]): void {
    if (toClient.length > 0) this.client.write(toClient.length === 1 ? toClient[0] : Buffer.concat(toClient));
    toClient.length = 0;
    if (out.length === 0 || !this.connection) return;
    const socket = this.connection.socket;
    const written = socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
    out.length = 0;
    if (!written) {
      this.client.pause();
      socket.once('drain', () => this.client.resume());
    }
  }

  private acquire(): void {
    this.acquiring = true;
    // Reading on while the client waits, up to a bound: pausing a socket costs system calls each time.
    if (this.waiting.reduce((total, message) => total + message.length, 0) > MAX_WAITING_BYTES) {
      this.client.pause();
      this.pausedForWait = true;
    }
    this.pool.acquire().then(
      (connection) => {
        this.acquiring = false;
        if (this.closed) {
          this.pool.release(connection);
          return;
        }
        this.attach(connection);
        const out: Buffer[] = [];
        const sql = handOver(connection, this.state);
        if (sql !== null) {
          out.push(handOverQuery(sql));
          this.swallowed++;
        }
        const toClient: Buffer[] = [];
        for (const message of this.waiting.splice(0)) this.send(message, out, toClient);
        this.flush(out, toClient);
        if (this.pausedForWait) this.client.resume();
        this.pausedForWait = false;
      },
      (error: unknown) => {
        this.acquiring = false;
        if (error instanceof PoolWaitExpired) {
          this.refuse(new Refusal({ severity: 'FATAL', code: SqlState.tooManyConnections, message: 'sorry, too many clients already', detail: `No server connection of the pool came free within ${this.pool.waitMs} ms.` }));
        } else {
          this.context.log.warn({ err: error }, 'a pool could not open a server connection');
          this.refuse(new Refusal({ severity: 'FATAL', code: SqlState.connectionFailure, message: 'the gateway could not open a server connection for this client' }));
        }
      },
    );
  }

  private attach(connection: ServerConnection): void {
    this.connection = connection;
    this.serverRest = NO_BYTES;
    connection.socket.on('data', this.onServerData);
    connection.socket.once('close', this.onServerClose);
    // A connection fresh from its login comes paused (ByteReader.detach), and a 'data' listener does not resume an explicit pause.
    connection.socket.resume();
  }

  private detach(clean: boolean): void {
    const connection = this.connection;
    if (!connection) return;
    this.connection = null;
    connection.socket.off('data', this.onServerData);
    connection.socket.off('close', this.onServerClose);
    connection.socket.resume();
    if (clean) this.pool.release(connection);
    else this.pool.discard(connection);
  }

  private serverClose(): void {
    this.connection = null;
    this.refuse(new Refusal({ severity: 'FATAL', code: SqlState.connectionFailure, message: 'the server closed the connection unexpectedly' }));
  }

  private serverData(chunk: Buffer): void {
    const connection = this.connection;
    if (!connection) return;
    const buffer = this.serverRest.length === 0 ? chunk : Buffer.concat([this.serverRest, chunk]);
    let parsed: { messages: Buffer[]; rest: number };
    try {
      parsed = frames(buffer, 0x7fffffff);
    } catch (error) {
      this.context.log.warn({ err: error }, 'a pooled server connection sent a malformed message');
      this.detach(false);
      this.end();
      return;
    }
    this.serverRest = parsed.rest === buffer.length ? NO_BYTES : Buffer.from(buffer.subarray(parsed.rest));
    const out: Buffer[] = [];
    for (const message of parsed.messages) {
      const type = message[0];
      if (type === PARAMETER_STATUS) noteParameter(connection, message);
      if (this.swallowed > 0) {
        if (type === ERROR) {
          // Its state is unknown now: reset in full at the next hand-over.
          connection.dirty = true;
          this.context.log.warn({ error: message.toString('utf8', 5) }, 'a pooled connection’s hand-over failed');
        }
        if (type === READY) this.swallowed--;
        continue;
      }
      if (type === COMMAND_COMPLETE) this.commandComplete(message, connection);
      else if (type === ERROR) this.changeFailed = true;
      else if (type === READY) {
        this.status = message[5];
        if (this.pendingChange && !this.changeFailed) this.state.apply(this.pendingChange);
        this.pendingChange = null;
      }
      this.tracker?.fromServer(type, type === READY ? message[5] : -1);
      this.statements.fromServer(message, out);
    }
    if (out.length > 0 && !this.client.write(allPassedOn(out, parsed.messages) ? buffer.subarray(0, parsed.rest) : out.length === 1 ? out[0] : Buffer.concat(out))) {
      connection.socket.pause();
      this.client.once('drain', () => connection.socket.resume());
    }
    if (this.idle && this.serverRest.length === 0) {
      this.detach(true);
      // Messages that came while the connection was held go out on the next lease.
      if (this.waiting.length > 0 && !this.acquiring) this.acquire();
    }
  }

  /** A cancel request with the client's key: to the server session running its query now, or nowhere. */
  async cancel(): Promise<void> {
    if (this.connection && !this.idle) await this.pool.cancel(this.connection);
  }

  /** Outside a transaction with nothing pending: the connection may go back to the pool. */
  private get idle(): boolean {
    return this.status === TRANSACTION_IDLE && this.statements.pending === 0 && !this.extendedOpen && this.swallowed === 0;
  }

  /** Statements that change what the connection holds beyond the transaction. */
  private commandComplete(message: Buffer, connection: ServerConnection): void {
    const tag = message.toString('latin1', 5, Math.min(message.length - 1, 20));
    if (tag === 'PREPARE') connection.sqlPrepared = true;
    else if (tag === 'DEALLOCATE') {
      // It may have been one of the pool's statements: the next hand-over, even to this client, deallocates them all.
      connection.sqlPrepared = true;
      connection.owner = null;
    } else if (tag === 'DEALLOCATE ALL' || tag === 'DISCARD ALL') {
      connection.prepared.clear();
      this.statements.clear();
    }
  }

  /** The client is told why (FATAL) and the connection ends. */
  private refuse(refusal: Refusal): void {
    if (this.closed) return;
    if (!this.client.destroyed && !this.client.writableEnded) this.client.end(errorResponse(refusal.fields));
    this.end();
  }

  /** The client left (or was refused): a connection mid-transaction is closed, a clean one goes back. */
  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.detach(this.idle);
    if (!this.client.writableEnded) this.client.end();
    setTimeout(() => this.client.destroy(), this.context.clientStallMs).unref();
  }
}

/** Whether `out` is every message of `messages`, in order: the bytes read can go on as they came. */
function allPassedOn(out: Buffer[], messages: Buffer[]): boolean {
  if (out.length !== messages.length || out.length < 2) return false;
  for (let i = 0; i < out.length; i++) if (out[i] !== messages[i]) return false;
  return true;
}

/** A simple Query message. */
export function handOverQuery(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  const message = Buffer.alloc(5 + text.length);
  message[0] = QUERY;
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}
