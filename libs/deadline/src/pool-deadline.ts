import { AsyncResource } from 'node:async_hooks';
import { beforeDeadline, remainingMs } from './deadline.js';
import { cutQueriesAtDeadline, type DeadlineClient } from './query-deadline.js';

/** A client of a node-postgres pool (`pg.PoolClient`), by shape. */
interface PooledClient extends DeadlineClient {
  release(error?: unknown): void;
}

type ConnectCallback = (error: unknown, client?: PooledClient, done?: (error?: unknown) => void) => void;

/**
 * Puts the work of a node-postgres pool (`pg.Pool`, named by shape) under the deadline of whoever
 * asks: a checkout that waits past it gives up (the connection, once free, goes back to the pool),
 * in both the promise and the callback form (the one `pool.query` uses), and so does every query
 * of its clients (`cutQueriesAtDeadline`). Work outside any deadline is untouched. `what` names
 * the connection in the error. Returns the pool.
 */
export function honourDeadlines<P extends { on: (...args: never[]) => unknown; connect: (...args: never[]) => unknown }>(pool: P, what: string): P {
  (pool.on as (event: string, listener: (client: PooledClient) => void) => unknown).call(pool, 'connect', (client) => cutQueriesAtDeadline(client));
  const connect = (pool.connect as (callback?: ConnectCallback) => Promise<PooledClient> | undefined).bind(pool);
  const bounded = (given?: ConnectCallback) => {
    // The pool calls a waiting checkout's callback from the release that frees a connection: in
    // the releaser's context, whose deadline (or none) is not the waiter's. Bound to the caller's.
    const callback = given && AsyncResource.bind(given);
    if (remainingMs() === undefined) return connect(callback);
    const checkout = beforeDeadline(what, connect() as Promise<PooledClient>, (client) => client.release());
    if (!callback) return checkout;
    checkout.then(
      (client) => callback(undefined, client, (error) => client.release(error)),
      (error: unknown) => callback(error, undefined, () => {}),
    );
    return undefined;
  };
  pool.connect = bounded as unknown as P['connect'];
  return pool;
}
