import type pg from 'pg';

/** What the pool is told when it takes back a client from its holder. */
export class TakenBackError extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'TakenBackError';
  }
}

/** A client out of the pool: since when, and the start of the last statement it was given other than BEGIN, COMMIT and the like. */
export interface Checkout {
  since: number;
  lastStatement: string | null;
}

/** How much of a statement a checkout keeps: enough to tell which component sent it. */
const STATEMENT_CHARS = 120;
/** Statements every transaction sends, whoever runs it: they tell nothing of the holder. */
const TRANSACTION_CONTROL = /^(?:begin|start transaction|commit|end|rollback|savepoint|release)\b/i;

const checkoutsOf = new WeakMap<pg.Pool, Map<pg.PoolClient, Checkout>>();

/**
 * Gives a checked-out client back to its pool with an error, so the pool drops it (ending its
 * connection); its holder's own release, later, does nothing.
 */
function takeBack(client: pg.PoolClient, why: string): void {
  // Read now, not at acquire: the pool sets each checkout's release after telling 'acquire'.
  const release = client.release;
  client.release = () => {};
  release(new TakenBackError(why));
}

function statementText(argument: unknown): string | null {
  const text = typeof argument === 'string' ? argument : (argument as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text.replace(/\s+/g, ' ').trim().slice(0, STATEMENT_CHARS) : null;
}

/**
 * Takes a client of `pool` back, whoever holds it, as soon as its connection ends while it is
 * checked out (the server or the network dropped it, or a deadline cut it): the pool drops it, and
 * its holder's own release later does nothing. Also keeps what `endCheckouts` tells of each client
 * out of the pool.
 *
 * Kysely, under MikroORM, gives a transaction's connection back only after a BEGIN, COMMIT or
 * ROLLBACK that succeeded (kysely-org/kysely#1990), and none can succeed on a lost connection: the
 * client stayed checked out for ever, the pool could never reach its next client there, and
 * `pool.end()` (the ORM's close) waited for it for ever. Nothing is lost by taking it: a client
 * whose connection ended answers every query with an error, and PostgreSQL rolled back what the
 * connection left open. Returns the pool.
 */
export function releaseLostClients(pool: pg.Pool): pg.Pool {
  const checkouts = new Map<pg.PoolClient, Checkout>();
  checkoutsOf.set(pool, checkouts);
  pool.on('acquire', (client) => void checkouts.set(client, { since: Date.now(), lastStatement: null }));
  pool.on('release', (_error: unknown, client: pg.PoolClient) => void checkouts.delete(client));
  pool.on('connect', (client) => {
    const query = client.query as (...args: unknown[]) => unknown;
    client.query = function recordedQuery(this: unknown, ...args: unknown[]) {
      const checkout = checkouts.get(client);
      const text = checkout && statementText(args[0]);
      if (checkout && text && !TRANSACTION_CONTROL.test(text)) checkout.lastStatement = text;
      return query.apply(this, args);
    } as typeof client.query;
    client.on('end', () => {
      if (checkouts.has(client)) takeBack(client, 'the connection ended while the client was checked out');
    });
  });
  return pool;
}

/**
 * Takes back every client of `pool` still checked out (the pool ends its connection, and its
 * holder's query fails) and answers what each was; the pool must be watched by `releaseLostClients`.
 */
export function endCheckouts(pool: pg.Pool): Checkout[] {
  const checkouts = checkoutsOf.get(pool);
  if (!checkouts) throw new Error('endCheckouts: the pool is not watched by releaseLostClients');
  const ended = [...checkouts.entries()].map(([client, checkout]) => ({ client, checkout: { ...checkout } }));
  for (const { client } of ended) takeBack(client, 'the control plane closed while the client was checked out');
  return ended.map(({ checkout }) => checkout);
}
