import { beforeDeadline, DeadlineExceededError, remainingMs } from './deadline.js';

/**
 * The part of a node-postgres client (`pg.Client`) that deadlines use, named here so that this
 * library needs no `pg` of its own.
 */
export interface DeadlineClient {
  query: (...args: never[]) => unknown;
  /** node-postgres's connection, whose socket is destroyed to cut a query. */
  connection?: { stream?: { destroy(error?: Error): void } };
}

/**
 * Puts the queries `client` runs (the promise form) under the deadline of whoever runs them; a
 * query run outside any deadline, with a callback, or as a cursor goes on as before. A query the
 * deadline cuts, or one asked for after it passed, rejects with DeadlineExceededError and destroys
 * the connection: a server that stopped answering (frozen, or cut off without a reset) would hold
 * the query and its connection forever, and PostgreSQL's own statement_timeout never fires on a
 * frozen server. A connection left in an unknown state (a transaction open) never returns to a
 * pool: its pool sees an unusable client and drops it. The client needs an 'error' listener, as
 * any pg client does. Returns the client.
 */
export function cutQueriesAtDeadline<C extends DeadlineClient>(client: C): C {
  const query = client.query as (...args: unknown[]) => unknown;
  const cut = () => client.connection?.stream?.destroy(new DeadlineExceededError('a query'));
  const guarded = function guardedQuery(this: unknown, ...args: unknown[]): unknown {
    const left = remainingMs();
    const last = args[args.length - 1];
    const submittable = typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
    if (left === undefined || typeof last === 'function' || submittable) return query.apply(this, args);
    if (left <= 0) {
      cut();
      return Promise.reject(new DeadlineExceededError('a query'));
    }
    return beforeDeadline('a query', query.apply(this, args) as Promise<unknown>).catch((error: unknown) => {
      if (error instanceof DeadlineExceededError) cut();
      throw error;
    });
  };
  client.query = guarded as C['query'];
  return client;
}
