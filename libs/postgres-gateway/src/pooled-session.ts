// A pooled client after its login: the first message of a transaction takes a server connection from
// its pool, which goes back when the server's ReadyForQuery says 'I' with nothing of the client's still
// pending. A connection that is not this client's own session is handed over in the same write as the
// client's messages (pooled-hand-over.ts), which the server runs only if the hand-over succeeded.
// Named prepared statements are mapped to the pool's shared ones (pooled-statements.ts).
import type { Duplex } from 'node:stream';
import type { ConnectionContext } from './context.js';
import { errorResponse } from './protocol.js';
import { FrontendType, TRANSACTION_IDLE } from './message-types.js';
import { exchange, pipelinedHandOver, queryMessage } from './pooled-hand-over.js';
import { SETTING_TAG_LENGTHS, type PooledClientState } from './pooled-settings.js';
import { PreparedStatements } from './pooled-statements.js';
import { ServerAnswers } from './pooled-answers.js';
import { PartialMessage } from './pooled-messages.js';
import type { QueryTracker } from './query-counters.js';
import { ProtocolViolation, Refusal, refusals } from './refusals.js';
import { PoolWaitExpired, type ServerConnection, type ServerListener, type ServerPool } from './server-pool.js';

/** Client messages of the extended protocol: a connection is kept from the first to the Sync. */
const EXTENDED = new Set<number>([FrontendType.Parse, FrontendType.Bind, FrontendType.Describe, FrontendType.Execute, FrontendType.Close, FrontendType.Flush]);
/** The longest message a pooled client may send (PostgreSQL's own limit is 1 GB; COPY data comes in many messages). */
const MAX_CLIENT_MESSAGE = 64 << 20;
/** What a client may send while it waits for a server connection before its socket is paused. */
const MAX_WAITING_BYTES = 1 << 20;
/** Hand-overs in a row that failed for one client's messages before it is refused (each closes its server connection). */
const MAX_HAND_OVER_FAILURES = 3;

/**
 * Where a pooled client is, one value moved by `move` alone: holding no server connection; waiting for
 * one; holding one whose hand-over the server has not answered yet (the client's messages sent behind
 * it, kept to go again, the gateway's own answers held); served; holding one while the server is asked
 * what its session holds; or gone. Its messages wait in `waiting` while it is in none of those.
 */
type Phase =
  | { kind: 'idle' }
  | { kind: 'waiting' }
  | { kind: 'handing-over'; connection: ServerConnection; sent: Buffer[]; held: Buffer[] }
  | { kind: 'serving'; connection: ServerConnection }
  | { kind: 'asking'; connection: ServerConnection }
  | { kind: 'ended' };
const IDLE: Phase = { kind: 'idle' };
const WAITING: Phase = { kind: 'waiting' };

export class PooledSession extends ServerAnswers implements ServerListener {
  private phase: Phase = IDLE;
  /** Messages that came while the client was not being served, and their bytes. */
  private readonly waiting: Buffer[] = [];
  private waitingBytes = 0;
  /** A message from the client whose end has not come yet. */
  private clientRest: PartialMessage | null = null;
  /** Extended-protocol messages went since the last Sync. */
  private extendedOpen = false;
  /** The client's reading was paused while it waited for a server connection. */
  private pausedForWait = false;
  /** Hand-overs of its current messages that failed in a row. */
  private handOverFailures = 0;
  protected readonly statements: PreparedStatements;
  // Bound, not an arrow field: under tsx each named arrow keeps a property dictionary (256 bytes an idle client).
  private readonly onClientData = this.clientData.bind(this);

  constructor(
    private readonly client: Duplex,
    private readonly pool: ServerPool,
    private readonly state: PooledClientState,
    protected readonly tracker: QueryTracker | null,
    private readonly context: Pick<ConnectionContext, 'clientStallMs' | 'log'>,
    preparedPerConnection: number,
  ) {
    super();
    this.statements = new PreparedStatements(pool.statementNames, preparedPerConnection);
  }

  start(clientRest: Buffer): void {
    this.client.on('data', this.onClientData);
    const end = this.end.bind(this);
    this.client.on('close', end);
    this.client.on('error', end);
    if (clientRest.length > 0) this.onClientData(clientRest);
    this.client.resume();
  }

  /** The one place the phase changes. */
  private move(next: Phase): void {
    this.phase = next;
  }

  /** The connection being served, or null. */
  private get serving(): ServerConnection | null {
    return this.phase.kind === 'serving' ? this.phase.connection : null;
  }

  // The client's bytes are walked in place: a message is a view of the chunk it came in (Node reads
  // each chunk into a buffer of its own, so a view stays valid), and a chunk of whole messages that all
  // go to the server goes as one write.
  private clientData(chunk: Buffer): void {
    if (this.phase.kind === 'ended') return;
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
      if (message[0] === FrontendType.Terminate) {
        this.flush(out, toClient);
        this.end();
        return;
      }
      if (this.phase.kind === 'idle' && this.waiting.length === 0) {
        const answer = this.statements.answerAlone(message);
        if (answer) {
          toClient.push(answer);
          continue;
        }
        // The common case: an idle connection is there, taken at once (no promise, no turn of the event loop).
        const idle = this.pool.take();
        if (idle) this.lease(idle, out);
      }
      const phase = this.phase;
      if (phase.kind === 'serving') {
        this.send(message, phase.connection, out, toClient);
        continue;
      }
      if (phase.kind === 'handing-over') {
        // Behind the hand-over, which the server answers first: kept to go again should it fail.
        phase.sent.push(message);
        this.send(message, phase.connection, out, phase.held, this.handOverFailures === 0);
        continue;
      }
      this.waiting.push(message);
      this.waitingBytes += message.length;
      if (!this.pausedForWait && this.waitingBytes > MAX_WAITING_BYTES) {
        this.client.pause();
        this.pausedForWait = true;
      }
    }
    if (offset < end) this.clientRest = new PartialMessage(offset === 0 ? buffer : buffer.subarray(offset), MAX_CLIENT_MESSAGE);
    this.flush(out, toClient);
    if (this.phase.kind === 'idle' && this.waiting.length > 0) this.acquire();
  }

  /** One client message for the server (into `out`), with the gateway's own answers due now. */
  private send(message: Buffer, connection: ServerConnection, out: Buffer[], toClient: Buffer[], counted = true): void {
    const type = message[0];
    if (counted) this.tracker?.fromClient(type);
    if (type === FrontendType.Sync || type === FrontendType.Query || type === FrontendType.FunctionCall) this.extendedOpen = false;
    else if (EXTENDED.has(type)) this.extendedOpen = true;
    if (type === FrontendType.Query || type === FrontendType.Parse) this.state.sent(message);
    this.statements.fromClient(message, connection, out, toClient);
  }

  private flush(out: Buffer[], toClient: Buffer[]): void {
    if (toClient.length > 0) this.client.write(toClient.length === 1 ? toClient[0] : Buffer.concat(toClient));
    toClient.length = 0;
    const phase = this.phase;
    if (out.length === 0 || (phase.kind !== 'serving' && phase.kind !== 'handing-over')) return;
    const connection = phase.connection;
    const socket = connection.socket;
    const written = socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
    out.length = 0;
    if (!written) {
      this.client.pause();
      socket.once('drain', () => this.client.resume());
    }
  }

  /** Waits for a server connection; the messages that came meanwhile go out on it once it is this client's. */
  private acquire(): void {
    this.move(WAITING);
    this.pool.acquire().then(
      (connection) => {
        if (this.phase.kind === 'ended') return this.pool.release(connection);
        this.lease(connection);
      },
      (error: unknown) => {
        if (this.phase.kind === 'ended') return;
        this.move(IDLE);
        if (error instanceof PoolWaitExpired) return this.refuse(refusals.poolFull(error.waitMs, error.size));
        // Else the pool could not open a connection (ServerUnreachable, its cause logged by the pool).
        this.refuse(refusals.serverUnreachable(this.pool.waitMs));
      },
    );
  }

  /**
   * Holds `connection` from now: served at once when it is this client's own session, else handed over
   * in the same write as the client's messages (pooled-hand-over.ts, `into` the caller's write when
   * given), which the server runs only once the hand-over has succeeded; the gateway's own answers wait.
   */
  private lease(connection: ServerConnection, into?: Buffer[]): void {
    this.serverRest = null;
    connection.listener = this;
    if (connection.owner === this.state) return this.startServing(connection);
    // No Flush of the gateway's own: its answers come with the client's, which end in a Sync, a Query or a Flush.
    const handOver = pipelinedHandOver(this.state.settings());
    const [out, held, sent] = [into ?? [], [] as Buffer[], this.waiting.splice(0)];
    out.push(handOver.messages);
    this.waitingBytes = 0;
    connection.owner = null;
    // DISCARD ALL deallocates every statement: the pool's are prepared again where a client needs them.
    connection.prepared.clear();
    this.handOverAnswers = handOver.answers;
    this.move({ kind: 'handing-over', connection, sent, held });
    try {
      for (const message of sent) this.send(message, connection, out, held, this.handOverFailures === 0);
    } catch (error) {
      if (!(error instanceof ProtocolViolation)) throw error;
      this.refuse(error);
      return;
    }
    if (!into) connection.socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
  }

  /** The hand-over's last answer came (`error` null), or its error: then the server skipped the client's messages, and they go to another connection. */
  protected handOverEnded(connection: ServerConnection, error: Buffer | null): void {
    const phase = this.phase;
    if (phase.kind !== 'handing-over') return;
    if (error === null) {
      connection.owner = this.state;
      this.handOverFailures = 0;
      this.move({ kind: 'serving', connection });
      if (phase.held.length > 0) this.client.write(phase.held.length === 1 ? phase.held[0] : Buffer.concat(phase.held));
      if (this.waiting.length > 0) this.startServing(connection);
      else this.resumeReading();
      return;
    }
    // The reset failed in the state a previous client left (a statement_timeout that cut it short), or a setting was refused.
    this.context.log.warn({ error: error.toString('utf8', 5) }, 'a pooled server connection was closed at its hand-over');
    this.pool.discard(connection);
    this.statements.abandon();
    this.waiting.unshift(...phase.sent);
    this.waitingBytes += phase.sent.reduce((bytes, message) => bytes + message.length, 0);
    this.move(IDLE);
    if (++this.handOverFailures > MAX_HAND_OVER_FAILURES) return this.refuse(refusals.serverStateUnknown());
    this.acquire();
  }

  /** Serves the client on `connection`: the messages that waited go out now. */
  private startServing(connection: ServerConnection): void {
    this.move({ kind: 'serving', connection });
    if (this.waiting.length === 0) return;
    const out: Buffer[] = [];
    const toClient: Buffer[] = [];
    const waiting = this.waiting.splice(0);
    this.waitingBytes = 0;
    try {
      for (const message of waiting) this.send(message, connection, out, toClient);
    } catch (error) {
      if (!(error instanceof ProtocolViolation)) throw error;
      this.refuse(error);
      return;
    }
    this.flush(out, toClient);
    this.resumeReading();
  }

  /** The client's reading, paused while it waited for a server connection, goes on. */
  private resumeReading(): void {
    if (this.pausedForWait) this.client.resume();
    this.pausedForWait = false;
  }

  /** The server closed the connection this client holds (ServerListener; an exchange's own closes end in lost()). */
  closed(): void {
    if (this.phase.kind === 'serving' || this.phase.kind === 'handing-over') this.lost(this.phase.connection);
  }

  protected malformed(connection: ServerConnection, length: number): void {
    this.context.log.warn({ length }, 'a pooled server connection sent a malformed message');
    this.lost(connection);
  }

  private lost(connection: ServerConnection): void {
    this.pool.discard(connection);
    if (this.phase.kind === 'ended') return;
    this.move(IDLE);
    this.refuse(refusals.serverConnectionLost());
  }

  /** What the server sends on the connection this client holds (ServerListener): walked in pooled-answers.ts. */
  data(chunk: Buffer): void {
    const phase = this.phase;
    if (phase.kind === 'serving' || phase.kind === 'handing-over') this.walk(chunk, phase.connection);
  }

  /** A CommandComplete that changes the session beyond its transaction: settings (asked for at the end), or LISTEN (pins the connection). */
  protected noteTag(buffer: Buffer, offset: number, next: number, connection: ServerConnection): void {
    const tagLength = next - offset - 6;
    if (SETTING_TAG_LENGTHS.has(tagLength)) this.state.tagged(buffer.toString('latin1', offset + 5, next - 1));
    else if (tagLength === 6 && buffer.toString('latin1', offset + 5, next - 1) === 'LISTEN') {
      // Its notifications come at any time, to this client alone: the connection is its own until it leaves.
      this.pool.pin(connection);
    }
  }

  /** The transaction is over: the server is asked what a SET left, and the connection goes back (a pinned one stays). */
  protected transactionEnded(connection: ServerConnection): void {
    if (this.state.reportDue) return this.askSettings(connection);
    this.state.transactionEnded();
    if (connection.state === 'pinned') return;
    this.detach(true);
    // Messages that came while the connection was held go out on the next lease.
    if (this.waiting.length > 0) this.acquire();
  }

  /** Asks the server what the client's session holds now (pooled-settings.ts): its answer is what the next hand-over applies. */
  private askSettings(connection: ServerConnection): void {
    this.move({ kind: 'asking', connection });
    exchange(connection, [queryMessage(this.state.reportQuestion())]).then(
      (answer) => {
        if (answer.error) {
          this.context.log.warn({ error: answer.error.toString('utf8', 5) }, 'a pooled client’s settings could not be read');
          connection.owner = null;
        } else {
          this.state.reported(answer.rows);
        }
        if (this.phase.kind === 'ended') return answer.error ? this.pool.discard(connection) : this.pool.release(connection);
        if (this.waiting.length > 0 || connection.state === 'pinned') return this.startServing(connection);
        this.move({ kind: 'serving', connection });
        this.detach(true);
      },
      () => this.lost(connection),
    );
  }

  /** Writes to the client; while its writes back up, the server connection is paused. */
  protected toClient(bytes: Buffer, connection: ServerConnection): void {
    if (this.client.write(bytes)) return;
    connection.socket.pause();
    this.client.once('drain', () => {
      if (this.serving === connection) connection.socket.resume();
    });
  }

  /** Gives the connection being served back to the pool (clean), or has it closed. */
  private detach(clean: boolean): void {
    const phase = this.phase;
    if (phase.kind !== 'serving' && phase.kind !== 'handing-over') return;
    const connection = phase.connection;
    this.move(IDLE);
    connection.listener = null;
    // Paused for this client's backpressure: the next holder reads it.
    if (connection.socket.isPaused()) connection.socket.resume();
    if (clean) this.pool.release(connection);
    else this.pool.discard(connection, this.statements.pending > 0 || this.passing > 0 || this.serverRest !== null || this.handOverAnswers > 0);
  }

  /** A cancel request with the client's key: to the server session running its query now, or nowhere. */
  async cancel(): Promise<void> {
    const connection = this.serving;
    if (connection && !this.idle) await this.pool.cancel(connection);
  }

  /** Outside a transaction with nothing pending: the connection may go back to the pool. */
  protected get idle(): boolean {
    return this.status === TRANSACTION_IDLE && this.statements.pending === 0 && !this.extendedOpen && this.handOverAnswers === 0;
  }

  /** The client is told why (FATAL) and the connection ends. */
  private refuse(refusal: Refusal): void {
    if (this.phase.kind === 'ended') return;
    // Not in the middle of a row passed on as it comes: the client would read the error as the row's end.
    if (!this.client.destroyed && !this.client.writableEnded) this.client.end(this.passing > 0 ? undefined : errorResponse(refusal.fields));
    this.end();
  }

  /** The client left (or was refused): a connection mid-transaction (or mid-hand-over) is closed, a clean one goes back; one being asked, when answered. */
  private end(): void {
    if (this.phase.kind === 'ended') return;
    // A server message cut in two is not a clean connection either: the next holder would read its end.
    this.detach(this.idle && this.serverRest === null && this.passing === 0);
    this.move({ kind: 'ended' });
    if (!this.client.writableEnded) this.client.end();
    setTimeout(() => this.client.destroy(), this.context.clientStallMs).unref();
  }
}
