import type pg from 'pg';

/** What the pool is told when it takes back a client whose connection ended under its holder. */
export class LostConnectionError extends Error {
  constructor() {
    super('the connection ended while the client was checked out');
    this.name = 'LostConnectionError';
  }
}

/**
 * Takes a client of `pool` back, whoever holds it, as soon as its connection ends while it is
 * checked out (the server or the network dropped it, or a deadline cut it): the pool drops it, and
 * its holder's own release later does nothing.
 *
 * Kysely, under MikroORM, gives a transaction's connection back only after a BEGIN, COMMIT or
 * ROLLBACK that succeeded (kysely-org/kysely#1990), and none can succeed on a lost connection: the
 * client stayed checked out for ever, the pool could never reach its next client there, and
 * `pool.end()` (the ORM's close) waited for it for ever. Nothing is lost by taking it: a client
 * whose connection ended answers every query with an error, and PostgreSQL rolled back what the
 * connection left open. Returns the pool.
 */
export function releaseLostClients(pool: pg.Pool): pg.Pool {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error: unknown, client: pg.PoolClient) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    client.on('end', () => {
      if (!checkedOut.has(client)) return;
      // Read now, not at acquire: the pool sets each checkout's release after telling 'acquire'.
      const release = client.release;
      client.release = () => {};
      release(new LostConnectionError());
    });
  });
  return pool;
}
