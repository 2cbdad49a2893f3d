import { createConnection } from 'node:net';
import { beforeDeadline, DeadlineExceededError, remainingMs } from './deadline.js';

/**
 * The part of a node-postgres client (`pg.Client`) that deadlines use, named here so that this
 * library needs no `pg` of its own.
 */
export interface DeadlineClient {
  query: (...args: never[]) => unknown;
  /** Ends the client; node-postgres marks it ending at once, which its pool checks on release. */
  end?: () => unknown;
  /** 'I' when no transaction is open (node-postgres's ReadyForQuery status). */
  getTransactionStatus?: () => string | null;
  /** Where the server is and which backend serves this client: what a CancelRequest needs. */
  host?: string;
  port?: number;
  processID?: number | null;
  secretKey?: number | null;
}

export interface CutOptions {
  /**
   * Told synchronously when a query is cut, before the caller's code goes on (and releases the
   * connection): a pool of its own marks the connection unusable here.
   */
  onCut?: () => void;
}

/** How long a CancelRequest may take to be handed to the server before it is given up. */
const CANCEL_TIMEOUT_MS = 5_000;
/** The protocol's CancelRequest code (1234 in the high 16 bits, 5678 in the low). */
const CANCEL_REQUEST_CODE = 80877102;

/**
 * Asks the server to cancel what the backend `processID` runs (a CancelRequest on a connection of
 * its own), so that a cut query does not go on holding locks and work. Best effort: nobody waits
 * for it, and a server that does not answer costs a socket for at most CANCEL_TIMEOUT_MS.
 */
function sendCancelRequest(client: DeadlineClient): void {
  const { host, port, processID, secretKey } = client;
  if (typeof processID !== 'number' || typeof secretKey !== 'number' || !host) return;
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  packet.writeInt32BE(processID, 8);
  packet.writeInt32BE(secretKey, 12);
  // A host starting with '/' is the directory of the server's Unix socket.
  const socket = host.startsWith('/') ? createConnection(`${host}/.s.PGSQL.${port ?? 5432}`) : createConnection({ host, port: port ?? 5432 });
  socket.setTimeout(CANCEL_TIMEOUT_MS, () => socket.destroy());
  socket.on('error', () => {});
  socket.on('connect', () => socket.end(packet));
}

/** A plain ROLLBACK (not to a savepoint), as text or as a query config. */
function isRollback(queryArgument: unknown): boolean {
  const text = typeof queryArgument === 'string' ? queryArgument : (queryArgument as { text?: unknown } | null)?.text;
  return typeof text === 'string' && /^\s*rollback\s*;?\s*$/i.test(text);
}

/**
 * Puts the queries `client` runs (promise and callback forms) under the deadline of whoever runs
 * them; a query run outside any deadline, or as a cursor, goes on as before. A query the deadline
 * cuts rejects with DeadlineExceededError (a callback gets it): the client is ended at once (its
 * socket destroyed), because a server that stopped answering (frozen, or cut off without a reset)
 * would hold the query and its connection forever, and PostgreSQL's own statement_timeout never
 * fires on a frozen server; the server is asked to cancel the query, in case it still runs. The
 * client is unusable from the moment of the cut, so a pool that it is released to in the same
 * promise chain drops it (node-postgres's pool checks it; a pool of one's own uses `onCut`). A
 * query asked for after the deadline passed is refused without being sent; the connection stays
 * when it is idle with no transaction open, and is ended otherwise. The client needs an 'error'
 * listener, as any pg client does. Returns the client.
 */
export function cutQueriesAtDeadline<C extends DeadlineClient>(client: C, options: CutOptions = {}): C {
  const query = client.query as (...args: unknown[]) => unknown;
  let inFlight = 0;
  let ended = false;
  const cut = () => {
    if (ended) return;
    ended = true;
    options.onCut?.();
    sendCancelRequest(client);
    // end() marks the client ending before it returns, and destroys the socket of a busy one.
    Promise.resolve(client.end?.()).catch(() => {});
  };
  const guarded = function guardedQuery(this: unknown, ...args: unknown[]): unknown {
    const left = remainingMs();
    const last = args[args.length - 1];
    // A rollback on a cut connection, or asked for after the deadline, is done without sending
    // it: the connection goes (if a transaction is open), and PostgreSQL rolls back what a
    // connection that ends left open. Refused, it would leave the caller holding the connection:
    // Kysely (under MikroORM) gives it back to its pool only after a rollback that succeeded, and
    // a pool waits for ever on a connection never given back.
    if (isRollback(args[0]) && (ended || (left !== undefined && left <= 0))) {
      if (inFlight > 0 || (client.getTransactionStatus?.() ?? 'I') !== 'I') cut();
      const done = { command: 'ROLLBACK', rowCount: null, rows: [], fields: [] };
      if (typeof last !== 'function') return Promise.resolve(done);
      process.nextTick(last, null, done);
      return undefined;
    }
    const submittable = typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
    if (left === undefined || submittable) return query.apply(this, args);
    if (left <= 0) {
      // Nothing sent: an idle connection outside a transaction is as healthy as before.
      const idle = inFlight === 0 && (client.getTransactionStatus?.() ?? 'I') === 'I';
      if (!idle) cut();
      const refused = new DeadlineExceededError('a query');
      if (typeof last !== 'function') return Promise.reject(refused);
      process.nextTick(last, refused);
      return undefined;
    }
    inFlight += 1;
    if (typeof last === 'function') {
      const callback = last as (error: unknown, ...rest: unknown[]) => void;
      let answered = false;
      const timer = setTimeout(() => {
        answered = true;
        inFlight -= 1;
        cut();
        callback(new DeadlineExceededError('a query'));
      }, left);
      const wrapped = (error: unknown, ...rest: unknown[]) => {
        if (answered) return;
        answered = true;
        inFlight -= 1;
        clearTimeout(timer);
        callback(error, ...rest);
      };
      return query.apply(this, [...args.slice(0, -1), wrapped]);
    }
    return beforeDeadline('a query', query.apply(this, args) as Promise<unknown>).then(
      (result) => {
        inFlight -= 1;
        return result;
      },
      (error: unknown) => {
        inFlight -= 1;
        if (error instanceof DeadlineExceededError) cut();
        throw error;
      },
    );
  };
  client.query = guarded as C['query'];
  return client;
}
