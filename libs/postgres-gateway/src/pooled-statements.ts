// Protocol-level named prepared statements on the pooled endpoint (PgBouncer's max_prepared_statements
// is the model). A client's statement names are its own: each maps to a name of the pool's, one per
// query text and parameter types, shared by the pool's clients (same credential, same role). A server
// connection prepares a pool name the first time a client of it needs it there (Parse injected before
// the Bind or Describe, its ParseComplete swallowed), and keeps the most recently used ones. A client's
// Parse of a statement the connection already has is answered by the gateway, a Close too.
//
// To put the gateway's own answers (and drop the server's answers to injected messages) in their
// right places, every message sent has its entry in a queue of expected answers, in order, as the
// server answers them: the answer that ends each, PostgreSQL's skipping to the Sync after an error.
import { BackendType, DescribeTarget, FrontendType, TRANSACTION_IDLE } from './message-types.js';
import { ProtocolViolation } from './refusals.js';
import type { ServerConnection } from './server-pool.js';
import type { StatementNames } from './statement-names.js';

const PARSE_COMPLETE = Buffer.from([BackendType.ParseComplete, 0, 0, 0, 4]);
const CLOSE_COMPLETE = Buffer.from([BackendType.CloseComplete, 0, 0, 0, 4]);
/** ReadyForQuery, idle: the answer to the Sync after messages the gateway answered alone. */
const READY_IDLE = Buffer.from([BackendType.ReadyForQuery, 0, 0, 0, 5, TRANSACTION_IDLE]);
const ERROR = BackendType.ErrorResponse;
/** The CommandComplete tags read here, by their lengths (most tags are looked at no further). */
const STATEMENT_TAGS = new Set(['PREPARE', 'DEALLOCATE', 'DEALLOCATE ALL', 'DISCARD ALL']);
const STATEMENT_TAG_LENGTHS = new Set([...STATEMENT_TAGS].map((tag) => tag.length));
const STATEMENT = DescribeTarget.Statement;
/** Answers a server may send at any time, which belong to no request. */
const ASYNC = new Set<number>([BackendType.NoticeResponse, BackendType.NotificationResponse, BackendType.ParameterStatus]);
/** What ends the answer to each client message. */
const ENDS = new Map<number, number[]>([
  [FrontendType.Parse, [BackendType.ParseComplete]],
  [FrontendType.Bind, [BackendType.BindComplete]],
  [FrontendType.Describe, [BackendType.RowDescription, BackendType.NoData]],
  [FrontendType.Execute, [BackendType.CommandComplete, BackendType.EmptyQueryResponse, BackendType.PortalSuspended]],
  [FrontendType.Close, [BackendType.CloseComplete]],
  [FrontendType.Sync, [BackendType.ReadyForQuery]],
  [FrontendType.Query, [BackendType.ReadyForQuery]],
  [FrontendType.FunctionCall, [BackendType.ReadyForQuery]],
]);
const PARSE_ENDS = ENDS.get(FrontendType.Parse)!;
const CLOSE_ENDS = ENDS.get(FrontendType.Close)!;
/** Client messages whose answer an error does not end (PostgreSQL answers them after it): a query, a Sync, a function call. */
const SIMPLE = new Set<number>([FrontendType.Sync, FrontendType.Query, FrontendType.FunctionCall]);

/**
 * The queue entry of a client message with no statement of its own to track, by the message's type
 * byte: one shared object per type, never changed (a message a transaction sends needs no new one).
 */
const FORWARD: (Expected | undefined)[] = [];
for (const [type, ends] of ENDS) FORWARD[type] = Object.freeze({ kind: 'forward' as const, ends, simple: SIMPLE.has(type) });

/** What a Sync expects: the one message after an error where PostgreSQL answers again. */
const SYNC_EXPECTED = FORWARD[FrontendType.Sync]!;

/**
 * A Parse or Close the server skipped (the failed one, or one after it): the connection's list of
 * prepared statements must not say otherwise. A skipped Parse prepared nothing; a skipped eviction
 * left its statement on the server, unlisted: the connection belongs to no client now, so that its
 * next hand-over (DISCARD ALL) deallocates it with the rest.
 */
function skipped(entry: Expected): void {
  if (entry.kind === 'answer') return;
  if (entry.parsed) entry.parsed.connection.prepared.delete(entry.parsed.name);
  if (entry.kind === 'drop' && entry.evicted) entry.evicted.owner = null;
}

type Expected =
  /** A client message's answer: passed on until one of `ends`. `simple`: a query or Sync, which an error does not end. */
  | { kind: 'forward'; ends: number[]; simple: boolean; parsed?: { connection: ServerConnection; name: string } }
  /** An injected Parse or Close (`evicted`: of a statement the connection's cache let go): its one answer is dropped. */
  | { kind: 'drop'; ends: number[]; parsed?: { connection: ServerConnection; name: string }; evicted?: ServerConnection }
  /** The gateway's own answer, sent when everything before it has been answered. */
  | { kind: 'answer'; bytes: Buffer };

function cString(buffer: Buffer, at: number): { value: string; end: number } {
  const end = buffer.indexOf(0, at);
  if (end < 0) throw new ProtocolViolation('invalid message format', 'A string in a message has no terminating zero byte.');
  return { value: buffer.toString('utf8', at, end), end: end + 1 };
}

function frame(type: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const z = (text: string): Buffer => Buffer.from(`${text}\0`, 'utf8');

/** One pooled client's statements, and the queue of answers expected from its current server connection. */
export class PreparedStatements {
  /** The client's statement name → the pool's name, and the Parse that makes it; made at the first (most clients name none). */
  private byName: Map<string, { poolName: string; parse: Buffer }> | null = null;
  private readonly queue: Expected[] = [];
  /** The last message was answered alone (answerAlone): a Sync after it is too. */
  private answeredAlone = false;
  /**
   * An extended-protocol message failed before the client sent its Sync: PostgreSQL discards every
   * message up to the Sync, answering none, so they go to it as they are and expect nothing.
   */
  private skippingToSync = false;

  constructor(
    private readonly names: StatementNames,
    private readonly perConnection: number,
  ) {}

  /** Client messages whose answers have not all come. */
  get pending(): number {
    // Skipping to the Sync, the server owes an answer still: its ReadyForQuery.
    return this.queue.length + (this.skippingToSync ? 1 : 0);
  }

  /** Forgets what was expected of a server connection that is gone before answering (its hand-over failed): the messages go again on another. */
  abandon(): void {
    this.queue.length = 0;
    this.skippingToSync = false;
  }

  /** Forgets every statement of the client (DEALLOCATE ALL, DISCARD ALL). */
  clear(): void {
    this.byName = null;
  }

  /**
   * Statements that change the connection's prepared statements (the CommandComplete tag; only those
   * of a known tag's length are read). Whatever a function does is not seen here, and needs not be: each
   * hand-over deallocates them all (DISCARD ALL, pooled-hand-over.ts).
   */
  commandComplete(buffer: Buffer, offset: number, next: number, connection: ServerConnection): void {
    if (!STATEMENT_TAG_LENGTHS.has(next - offset - 6)) return;
    const tag = buffer.toString('latin1', offset + 5, next - 1);
    if (tag === 'DEALLOCATE' || tag === 'PREPARE') {
      // Maybe one of the pool's, or a name the pool may give later: the next transaction, even this client's, starts with a hand-over.
      connection.owner = null;
    } else if (tag === 'DEALLOCATE ALL' || tag === 'DISCARD ALL') {
      connection.prepared.clear();
      this.clear();
    }
  }

  /**
   * The gateway's answer to a message that needs no server while the client holds none: a Parse or
   * Close, and the Sync after them (nothing is pending, no transaction is open). Without it a client
   * that prepares synchronously (libpq's PQprepare) would need a server connection per Parse, outside
   * any transaction: a pool whose connections all wait on such clients would stall.
   */
  answerAlone(message: Buffer): Buffer | null {
    const type = message[0];
    if (type === FrontendType.Sync && this.answeredAlone) {
      this.answeredAlone = false;
      return READY_IDLE;
    }
    const answer = type === FrontendType.Parse || type === FrontendType.Close ? this.answerParseOrClose(message) : null;
    this.answeredAlone = answer !== null;
    return answer;
  }

  /**
   * A Parse of a statement some server of the pool already parsed (it is prepared where the Bind
   * runs), a Close of a statement: answered by the gateway, or null. Only when nothing is pending, so
   * that the answer comes in its place.
   */
  private answerParseOrClose(message: Buffer): Buffer | null {
    if (this.queue.length > 0) return null;
    const type = message[0];
    if (type === FrontendType.Parse) {
      const name = cString(message, 5);
      if (name.value === '') return null;
      const query = cString(message, name.end);
      const poolName = this.names.nameOf(`${message.subarray(query.end).toString('hex')}:${query.value}`);
      if (!this.names.wasParsed(poolName)) return null;
      (this.byName ??= new Map()).set(name.value, { poolName, parse: frame(message[0], z(poolName), message.subarray(name.end)) });
      return PARSE_COMPLETE;
    }
    if (type === FrontendType.Close && message[5] === STATEMENT) {
      this.byName?.delete(cString(message, 6).value);
      return CLOSE_COMPLETE;
    }
    return null;
  }

  /**
   * One client message for `connection`: what goes to the server into `toServer`, and the gateway's
   * own answers that are due now into `toClient`.
   */
  fromClient(message: Buffer, connection: ServerConnection, toServer: Buffer[], toClient: Buffer[]): void {
    if (this.skippingToSync) {
      if (message[0] !== FrontendType.Sync) {
        toServer.push(message);
        return;
      }
      this.skippingToSync = false;
    }
    const type = message[0];
    const forward = FORWARD[type];
    if (type === FrontendType.Parse) {
      const name = cString(message, 5);
      if (name.value !== '') return this.parse(message, name, connection, toServer, toClient);
    } else if (type === FrontendType.Bind) {
      const portal = cString(message, 5);
      const statement = cString(message, portal.end);
      if (statement.value !== '') {
        const poolName = this.ensure(statement.value, connection, toServer);
        message = Buffer.concat([message.subarray(0, 5), message.subarray(5, portal.end), z(poolName), message.subarray(statement.end)]);
        message.writeInt32BE(message.length - 1, 1);
      }
    } else if ((type === FrontendType.Describe || type === FrontendType.Close) && message[5] === STATEMENT) {
      const name = cString(message, 6);
      if (name.value !== '') {
        if (type === FrontendType.Close) {
          // The client's name goes; the pool's statement stays on the server for other clients.
          this.byName?.delete(name.value);
          return this.answer(CLOSE_COMPLETE, toClient);
        }
        message = frame(message[0], Buffer.from([STATEMENT]), z(this.ensure(name.value, connection, toServer)));
      }
    }
    toServer.push(message);
    if (forward) this.queue.push(forward);
  }

  private parse(message: Buffer, name: { value: string; end: number }, connection: ServerConnection, toServer: Buffer[], toClient: Buffer[]): void {
    const query = cString(message, name.end);
    const rest = message.subarray(query.end);
    const poolName = this.names.nameOf(`${rest.toString('hex')}:${query.value}`);
    const parse = frame(message[0], z(poolName), message.subarray(name.end));
    (this.byName ??= new Map()).set(name.value, { poolName, parse });
    if (connection.prepared.has(poolName)) {
      this.evict(connection.touch(poolName, this.perConnection), connection, toServer);
      return this.answer(PARSE_COMPLETE, toClient);
    }
    this.evict(connection.touch(poolName, this.perConnection), connection, toServer);
    toServer.push(parse);
    this.queue.push({ kind: 'forward', ends: PARSE_ENDS, simple: false, parsed: { connection, name: poolName } });
  }

  /** The pool's name for a client's statement, prepared on `connection` first if it lacks it. */
  private ensure(clientName: string, connection: ServerConnection, toServer: Buffer[]): string {
    const known = this.byName?.get(clientName);
    // Unknown to this client: a name no pool statement has, so that the server's own error answers.
    if (!known) return clientName.startsWith('_pool_') ? `${clientName} (not prepared)` : clientName;
    if (!connection.prepared.has(known.poolName)) {
      this.evict(connection.touch(known.poolName, this.perConnection), connection, toServer);
      toServer.push(known.parse);
      this.queue.push({ kind: 'drop', ends: PARSE_ENDS, parsed: { connection, name: known.poolName } });
    } else {
      connection.touch(known.poolName, this.perConnection);
    }
    return known.poolName;
  }

  /** Closes on the server the statements its LRU let go. */
  private evict(names: string[], connection: ServerConnection, toServer: Buffer[]): void {
    for (const name of names) {
      toServer.push(frame(FrontendType.Close, Buffer.from([STATEMENT]), z(name)));
      this.queue.push({ kind: 'drop', ends: CLOSE_ENDS, evicted: connection });
    }
  }

  private answer(bytes: Buffer, toClient: Buffer[]): void {
    if (this.queue.length === 0) toClient.push(bytes);
    else this.queue.push({ kind: 'answer', bytes });
  }

  /**
   * The common case of a server message, decided from its type alone: true when it goes to the client
   * as it is with nothing of the gateway's after it (the queue kept, or its head ended); false, with
   * nothing changed, when `fromServer` must see it.
   */
  passes(type: number): boolean {
    const head = this.queue[0];
    if (!head || head.kind === 'answer' || ASYNC.has(type)) return true;
    if (head.kind !== 'forward' || (type === ERROR && !head.simple)) return false;
    if (!head.ends.includes(type)) return true;
    if (this.queue.length > 1 && this.queue[1].kind === 'answer') return false;
    if (head.parsed) this.names.parsedOnce(head.parsed.name);
    this.queue.shift();
    // As in answered(): an idle client keeps no shifted array's capacity.
    if (this.queue.length === 0) this.queue.length = 0;
    return true;
  }

  /** One server message: passed on into `toClient` or dropped, with any of the gateway's answers now due. */
  fromServer(message: Buffer, toClient: Buffer[]): void {
    const type = message[0];
    const head = this.queue[0];
    if (!head || ASYNC.has(type) || head.kind === 'answer') {
      toClient.push(message);
      return;
    }
    if (type === ERROR && !(head.kind === 'forward' && head.simple)) {
      // PostgreSQL skips everything up to the Sync (a Query too), answering none of it.
      toClient.push(message);
      while (this.queue.length > 0 && this.queue[0] !== SYNC_EXPECTED) skipped(this.queue.shift()!);
      // No Sync sent yet: what the client sends until it is discarded by the server too.
      if (this.queue.length === 0) this.skippingToSync = true;
      this.answered(toClient);
      return;
    }
    if (head.kind === 'forward') toClient.push(message);
    if (head.ends.includes(type)) {
      if (head.parsed) this.names.parsedOnce(head.parsed.name);
      this.queue.shift();
      this.answered(toClient);
    }
  }

  /** Sends the gateway's answers that have come to the head of the queue. */
  private answered(toClient: Buffer[]): void {
    while (this.queue[0]?.kind === 'answer') toClient.push((this.queue.shift() as { bytes: Buffer }).bytes);
    // All answered: the queue's storage goes (V8 keeps a shifted array's capacity), as an idle client holds it.
    if (this.queue.length === 0) this.queue.length = 0;
  }
}
