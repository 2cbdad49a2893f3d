// The server's answers to a pooled client, as its session (pooled-session.ts) receives them on the
// server connection it holds: walked in place and passed on, the gateway's own answers put in their
// places (pooled-statements.ts), long rows passed on as their bytes come, and what the session must
// know of them noted: the transaction status, CommandComplete tags, the end of each answer.
import { BackendType, TRANSACTION_IDLE } from './message-types.js';
import { PartialMessage } from './pooled-messages.js';
import type { PreparedStatements } from './pooled-statements.js';
import type { QueryTracker } from './query-counters.js';
import type { ServerConnection } from './server-connection.js';

/** The longest message a server may send (PostgreSQL's own is 1 GB). */
const MAX_SERVER_MESSAGE = 0x7fffffff;
/** Rows and COPY data longer than this go on to the client as their bytes come, not held until whole. */
const STREAM_ABOVE = 64 << 10;

export abstract class ServerAnswers {
  /** A server message whose end has not come yet. */
  protected serverRest: PartialMessage | null = null;
  /** Bytes of a long server row or COPY data still to pass straight to the client (STREAM_ABOVE). */
  protected passing = 0;
  /** The transaction status of the server's last ReadyForQuery. */
  protected status = TRANSACTION_IDLE;
  /** CommandCompletes of a pipelined hand-over still to come (pooled-hand-over.ts): its answers are the gateway's, never the client's. */
  protected handOverAnswers = 0;
  protected abstract readonly statements: PreparedStatements;
  protected abstract readonly tracker: QueryTracker | null;

  /** Writes to the client. */
  protected abstract toClient(bytes: Buffer, connection: ServerConnection): void;
  /** A CommandComplete of the client's. */
  protected abstract noteTag(buffer: Buffer, offset: number, next: number, connection: ServerConnection): void;
  /** Outside a transaction, with nothing of the client's pending. */
  protected abstract get idle(): boolean;
  /** Every answer the client waited for has come, and it is outside a transaction. */
  protected abstract transactionEnded(connection: ServerConnection): void;
  /** A pipelined hand-over's last answer came (`error` null), or its error. */
  protected abstract handOverEnded(connection: ServerConnection, error: Buffer | null): void;
  /** The server sent what is no message. */
  protected abstract malformed(connection: ServerConnection, length: number): void;

  /**
   * What the server sends on `connection`, for the client holding it. Messages are walked in place;
   * those that go to the client as they are (nearly all) go as one view of the chunk, and only the few
   * the gateway answers for, drops or rewrites are looked at apart.
   */
  protected walk(chunk: Buffer, connection: ServerConnection): void {
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
        this.malformed(connection, length);
        return;
      }
      const next = offset + 1 + length;
      if (next > end) break;
      if (this.handOverAnswers > 0) {
        // The hand-over's answers (its notices too) are dropped; nothing of the client's comes before them.
        out ??= [];
        if (offset > passFrom) out.push(buffer.subarray(passFrom, offset));
        passFrom = next;
        const message = buffer.subarray(offset, next);
        offset = next;
        if (type === BackendType.ParameterStatus) connection.noteParameter(message);
        else if (type === BackendType.ErrorResponse) {
          // The server skips the client's messages up to a Sync; the connection is closed, the rest of this chunk with it.
          this.handOverAnswers = 0;
          this.handOverEnded(connection, message);
          return;
        } else if (type === BackendType.CommandComplete && --this.handOverAnswers === 0) this.handOverEnded(connection, null);
        continue;
      }
      if (type === BackendType.ParameterStatus) connection.noteParameter(buffer.subarray(offset, next));
      else if (type === BackendType.CommandComplete) {
        this.statements.commandComplete(buffer, offset, next, connection);
        this.noteTag(buffer, offset, next, connection);
      } else if (type === BackendType.ReadyForQuery) this.status = buffer[offset + 5];
      this.tracker?.fromServer(type, type === BackendType.ReadyForQuery ? buffer[offset + 5] : -1);
      if (!this.statements.passes(type)) {
        out ??= [];
        if (offset > passFrom) out.push(buffer.subarray(passFrom, offset));
        this.statements.fromServer(buffer.subarray(offset, next), out);
        passFrom = next;
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
    if (this.idle && this.serverRest === null && this.passing === 0) this.transactionEnded(connection);
  }

  /**
   * Whether the message cut at `offset` is a long row or COPY data for the client as it is: then its
   * bytes so far go now and the rest as it comes (`passing`), instead of being held until whole.
   */
  private startsLongPassage(buffer: Buffer, offset: number, end: number): boolean {
    if (end - offset < 5) return false;
    const type = buffer[offset];
    const length = buffer.readInt32BE(offset + 1);
    if ((type !== BackendType.DataRow && type !== BackendType.CopyData) || length <= STREAM_ABOVE || !this.statements.passes(type)) return false;
    this.tracker?.fromServer(type, -1);
    this.passing = offset + 1 + length - end;
    return true;
  }
}
