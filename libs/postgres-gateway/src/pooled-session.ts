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
import { PartialMessage, handOverQuery } from './pooled-messages.js';
import type { QueryTracker } from './query-counters.js';
import { ProtocolViolation, Refusal, SqlState } from './refusals.js';
import { PoolWaitExpired, type ServerConnection, type ServerListener, type ServerPool } from './server-pool.js';

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
/** The longest message a server may send (PostgreSQL's own is 1 GB). */
const MAX_SERVER_MESSAGE = 0x7fffffff;
/** What a client may send while it waits for a server connection before its socket is paused. */
const MAX_WAITING_BYTES = 1 << 20;
/** Rows and COPY data, which go to the client as they are: one longer than this goes on as its bytes come, not held until whole. */
const DATA_ROW = code('D');
const COPY_DATA = code('d');
const STREAM_ABOVE = 64 << 10;

export class PooledSession implements ServerListener {
  private connection: ServerConnection | null = null;
  /** Messages that came while no server connection was held, and their bytes. */
  private readonly waiting: Buffer[] = [];
  private waitingBytes = 0;
  private acquiring = false;
  /** A message whose end has not come yet, from the client and from the server. */
  private clientRest: PartialMessage | null = null;
  private serverRest: PartialMessage | null = null;
  /** Bytes of a long server row or COPY data still to pass straight to the client (STREAM_ABOVE). */
  private passing = 0;
  /** Extended-protocol messages went since the last Sync. */
  private extendedOpen = false;
  /** Hand-over queries sent whose ReadyForQuery (and everything before it) the client must not see. */
  private swallowed = 0;
  private status = TRANSACTION_IDLE;
  /** A tracked SET on its way, and whether it failed. */
  private pendingChange: TrackedChange | null = null;
  private changeFailed = false;
  /** The session is over (the client left or was refused). */
  private ended = false;
  /** The client's reading was paused while it waited for a server connection. */
  private pausedForWait = false;
  /** The gateway answered the client's last messages itself: a Sync now is answered too. */
  private readonly statements: PreparedStatements;
  // A bound method, not an arrow field: tsx (esbuild's keepNames) gives each named arrow of each
  // instance a property dictionary of its own, 256 bytes an idle client would keep.
  private readonly onClientData = this.clientData.bind(this);

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

  // The client's bytes are walked in place: a message is a view of the chunk it came in (Node reads
  // each chunk into a buffer of its own, so a view stays valid), and a chunk of whole messages that all
  // go to the server goes as one write.
  private clientData(chunk: Buffer): void {
    if (this.ended) return;
    const buffer = this.clientRest === null ? chunk : this.clientRest.add(chunk);
    if (buffer === null) return;
    this.clientRest = null;
    try {
      this.clientMessages(buffer);
    } catch (error) {
      // A message the gateway cannot read (a string without its terminating zero): PostgreSQL's answer to it.
      if (!(error instanceof ProtocolViolation)) throw error;
      this.refuse(error);
    }
  }

  /** The client's messages in `buffer`, the start of one not whole yet kept for the next chunk. */
  private clientMessages(buffer: Buffer): void {
    const end = buffer.length;
    const out: Buffer[] = [];
    const toClient: Buffer[] = [];
    let offset = 0;
    while (end - offset >= 5) {
      const length = buffer.readInt32BE(offset + 1);
      if (length < 4 || length > MAX_CLIENT_MESSAGE) {
        this.flush(out, toClient);
        this.refuse(new ProtocolViolation(`invalid message length ${length}`));
        return;
      }
      const next = offset + 1 + length;
      if (next > end) break;
      const message = offset === 0 && next === end ? buffer : buffer.subarray(offset, next);
      offset = next;
      if (message[0] === TERMINATE) {
        this.flush(out, toClient);
        this.end();
        return;
      }
      if (!this.connection) {
        if (this.waiting.length === 0 && !this.acquiring) {
          const answer = this.statements.answerAlone(message);
          if (answer) {
            toClient.push(answer);
            continue;
          }
          // The common case: an idle connection is there, taken at once (no promise, no turn of the event loop).
          const idle = this.pool.take();
          if (idle) this.lease(idle, out);
        }
      }
      if (this.connection) {
        this.send(message, out, toClient);
        continue;
      }
      this.waiting.push(message);
      this.waitingBytes += message.length;
      if (this.acquiring && !this.pausedForWait && this.waitingBytes > MAX_WAITING_BYTES) {
        this.client.pause();
        this.pausedForWait = true;
      }
    }
    if (offset < end) this.clientRest = new PartialMessage(offset === 0 ? buffer : buffer.subarray(offset), MAX_CLIENT_MESSAGE);
    this.flush(out, toClient);
    if (!this.connection && this.waiting.length > 0 && !this.acquiring) this.acquire();
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

  /** Waits for a server connection; the messages that came meanwhile go out on it. */
  private acquire(): void {
    this.acquiring = true;
    // Reading on while the client waits, up to a bound: pausing a socket costs system calls each time.
    if (this.waitingBytes > MAX_WAITING_BYTES) {
      this.client.pause();
      this.pausedForWait = true;
    }
    this.pool.acquire().then(
      (connection) => {
        this.acquiring = false;
        if (this.ended) {
          this.pool.release(connection);
          return;
        }
        const out: Buffer[] = [];
        this.lease(connection, out);
        const toClient: Buffer[] = [];
        const waiting = this.waiting.splice(0);
        this.waitingBytes = 0;
        try {
          for (const message of waiting) this.send(message, out, toClient);
        } catch (error) {
          if (!(error instanceof ProtocolViolation)) throw error;
          this.refuse(error);
          return;
        }
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

  /** Holds `connection` from now: its answers come here, and one last used by another client is made this one's first (into `out`). */
  private lease(connection: ServerConnection, out: Buffer[]): void {
    this.connection = connection;
    this.serverRest = null;
    connection.listener = this;
    const sql = handOver(connection, this.state);
    if (sql !== null) {
      out.push(handOverQuery(sql));
      this.swallowed++;
    }
  }

  private detach(clean: boolean): void {
    const connection = this.connection;
    if (!connection) return;
    this.connection = null;
    connection.listener = null;
    // Paused for this client's backpressure: the next holder reads it.
    if (connection.socket.isPaused()) connection.socket.resume();
    if (clean) this.pool.release(connection);
    else this.pool.discard(connection, this.statements.pending > 0 || this.passing > 0 || this.serverRest !== null);
  }

  /** The server closed the connection this client holds (ServerListener). */
  closed(): void {
    this.connection = null;
    this.refuse(new Refusal({ severity: 'FATAL', code: SqlState.connectionFailure, message: 'the server closed the connection unexpectedly' }));
  }

  /**
   * What the server sends on the connection this client holds (ServerListener). Messages are walked in
   * place; those that go to the client as they are (nearly all) go as one view of the chunk, and only
   * the few the gateway answers for, drops or rewrites are looked at apart.
   */
  data(chunk: Buffer): void {
    const connection = this.connection;
    if (!connection) return;
    if (this.passing > 0) {
      // The rest of a long row: nothing in it for the gateway to read (a row never ends a statement's answer).
      const through = chunk.length <= this.passing ? chunk : chunk.subarray(0, this.passing);
      this.passing -= through.length;
      this.toClient(through, connection);
      if (through === chunk) return;
      chunk = chunk.subarray(through.length);
    }
    // A rest shorter than a header is joined at once: the message it starts may be a long row, to pass on as it comes.
    const buffer = this.serverRest === null ? chunk : this.serverRest.headerCut ? this.serverRest.joinedWith(chunk) : this.serverRest.add(chunk);
    if (buffer === null) return;
    this.serverRest = null;
    const end = buffer.length;
    let offset = 0;
    /** What goes to the client, once a message does not go as it came; before that, [0, offset). */
    let out: Buffer[] | null = null;
    /** Where the current run of messages passed on as they came starts. */
    let passFrom = 0;
    while (end - offset >= 5) {
      const type = buffer[offset];
      const length = buffer.readInt32BE(offset + 1);
      if (length < 4) {
        this.context.log.warn({ length }, 'a pooled server connection sent a malformed message');
        this.detach(false);
        this.end();
        return;
      }
      const next = offset + 1 + length;
      if (next > end) break;
      if (type === PARAMETER_STATUS) noteParameter(connection, buffer.subarray(offset, next));
      if (this.swallowed > 0) {
        // An answer to the gateway's own hand-over query: dropped.
        out ??= [];
        if (offset > passFrom) out.push(buffer.subarray(passFrom, offset));
        passFrom = next;
        if (type === ERROR) {
          // Its state is unknown now: reset in full at the next hand-over.
          connection.dirty = true;
          this.context.log.warn({ error: buffer.toString('utf8', offset + 5, next) }, 'a pooled connection’s hand-over failed');
        }
        if (type === READY) this.swallowed--;
      } else {
        if (type === COMMAND_COMPLETE) this.statements.commandComplete(buffer, offset, next, connection);
        else if (type === ERROR) this.changeFailed = true;
        else if (type === READY) {
          this.status = buffer[offset + 5];
          if (this.pendingChange && !this.changeFailed) this.state.apply(this.pendingChange);
          this.pendingChange = null;
        }
        this.tracker?.fromServer(type, type === READY ? buffer[offset + 5] : -1);
        if (!this.statements.passes(type)) {
          out ??= [];
          if (offset > passFrom) out.push(buffer.subarray(passFrom, offset));
          this.statements.fromServer(buffer.subarray(offset, next), out);
          passFrom = next;
        }
      }
      offset = next;
    }
    if (offset < end && this.startsLongPassage(buffer, offset, end)) offset = end;
    if (offset < end) this.serverRest = new PartialMessage(offset === 0 ? buffer : buffer.subarray(offset), MAX_SERVER_MESSAGE);
    let toClient: Buffer | null = null;
    if (out === null) toClient = offset === 0 ? null : offset === end ? buffer : buffer.subarray(0, offset);
    else {
      if (offset > passFrom) out.push(buffer.subarray(passFrom, offset));
      toClient = out.length === 0 ? null : out.length === 1 ? out[0] : Buffer.concat(out);
    }
    if (toClient !== null) this.toClient(toClient, connection);
    if (this.idle && this.serverRest === null && this.passing === 0) {
      this.detach(true);
      // Messages that came while the connection was held go out on the next lease.
      if (this.waiting.length > 0 && !this.acquiring) this.acquire();
    }
  }

  /**
   * Whether the message cut at `offset` is a long row or COPY data for the client as it is: then its
   * bytes so far go now and the rest as it comes (`passing`), instead of being held until whole.
   */
  private startsLongPassage(buffer: Buffer, offset: number, end: number): boolean {
    if (end - offset < 5 || this.swallowed > 0) return false;
    const type = buffer[offset];
    const length = buffer.readInt32BE(offset + 1);
    if ((type !== DATA_ROW && type !== COPY_DATA) || length <= STREAM_ABOVE || !this.statements.passes(type)) return false;
    this.tracker?.fromServer(type, -1);
    this.passing = offset + 1 + length - end;
    return true;
  }

  /** Writes to the client; while its writes back up, the server connection is paused. */
  private toClient(bytes: Buffer, connection: ServerConnection): void {
    if (this.client.write(bytes)) return;
    connection.socket.pause();
    this.client.once('drain', () => {
      if (this.connection === connection) connection.socket.resume();
    });
  }

  /** A cancel request with the client's key: to the server session running its query now, or nowhere. */
  async cancel(): Promise<void> {
    if (this.connection && !this.idle) await this.pool.cancel(this.connection);
  }

  /** Outside a transaction with nothing pending: the connection may go back to the pool. */
  private get idle(): boolean {
    return this.status === TRANSACTION_IDLE && this.statements.pending === 0 && !this.extendedOpen && this.swallowed === 0;
  }

  /** The client is told why (FATAL) and the connection ends. */
  private refuse(refusal: Refusal): void {
    if (this.ended) return;
    // Not in the middle of a row passed on as it comes: the client would read the error as the row's end.
    if (!this.client.destroyed && !this.client.writableEnded) this.client.end(this.passing > 0 ? undefined : errorResponse(refusal.fields));
    this.end();
  }

  /** The client left (or was refused): a connection mid-transaction is closed, a clean one goes back. */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    // A server message cut in two is not a clean connection either: the next holder would read its end.
    this.detach(this.idle && this.serverRest === null && this.passing === 0);
    if (!this.client.writableEnded) this.client.end();
    setTimeout(() => this.client.destroy(), this.context.clientStallMs).unref();
  }
}
