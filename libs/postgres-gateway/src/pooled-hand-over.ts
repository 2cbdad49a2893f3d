// Making a pool's server connection a client's own, and learning from the server what a client's
// session holds. Nothing here reads a client's SQL: whatever a previous client did (a function that
// calls set_config, a DO block that LISTENs, a trigger that takes an advisory lock), the hand-over
// resets everything a session keeps past its transaction, applies the client's settings, and has the
// server count its prepared statements, before any message of the client goes to that connection.
import { BackendType, FrontendType } from './message-types.js';
import { frames } from './pooled-messages.js';
import { literal, type PooledClientState } from './pooled-settings.js';
import type { ServerConnection } from './server-pool.js';

/**
 * What any earlier client may have left on a server session, undone: its settings (RESET ALL, which
 * leaves the role alone, hence RESET ROLE: back to the credential's defaults), open cursors (WITH HOLD
 * ones too), LISTEN, temporary tables and sequence state; the advisory locks and the count of prepared
 * statements come in the SELECT that follows. Not DEALLOCATE ALL: the pool's protocol-level
 * statements are shared by its clients (the count proves none of a client's own is left).
 */
export const RESET_SQL = 'RESET ALL; RESET ROLE; CLOSE ALL; UNLISTEN *; DISCARD TEMP; DISCARD SEQUENCES;';


/** The role is applied last: settings before it are made as the credential itself. */
function orderedSettings(settings: ReadonlyMap<string, string>): [string, string][] {
  const ordered = [...settings].filter(([name]) => name !== 'role');
  const role = settings.get('role');
  if (role !== undefined) ordered.push(['role', role]);
  return ordered;
}

/**
 * The one simple query that makes a server connection a client's: the reset, then a SELECT that
 * releases session advisory locks, counts the prepared statements made by SQL (any is left by a
 * client: PREPARE, or one put in place of a pool statement) and by the protocol (the pool's own,
 * which must be exactly those the gateway lists for the connection), and applies every setting of the
 * client with set_config (as a `-c` option would: `search_path=a,b` is two schemas). Every name is
 * qualified: a customer's schema on the search path changes nothing of it.
 */
export function handOverSql(settings: ReadonlyMap<string, string>): string {
  const applied = orderedSettings(settings).map(([name, value]) => `, pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`);
  return (
    `${RESET_SQL} SELECT pg_catalog.pg_advisory_unlock_all(), s.sql, s.protocol${applied.join('')} FROM (SELECT pg_catalog.count(*) FILTER (WHERE from_sql) AS sql, ` +
    'pg_catalog.count(*) FILTER (WHERE NOT from_sql) AS protocol FROM pg_catalog.pg_prepared_statements) AS s;'
  );
}

/** The hand-over query of each settings map: clients of one login share their map (pooled-settings.ts), so one Buffer serves them all. */
const handOverQueries = new WeakMap<ReadonlyMap<string, string>, Buffer>();

function handOverQuery(settings: ReadonlyMap<string, string>): Buffer {
  let query = handOverQueries.get(settings);
  if (!query) handOverQueries.set(settings, (query = queryMessage(handOverSql(settings))));
  return query;
}

/** The fields of a DataRow, as text (null for NULL). */
function dataRowFields(message: Buffer): (string | null)[] {
  const fields: (string | null)[] = [];
  let at = 7;
  for (let i = message.readInt16BE(5); i > 0; i--) {
    const length = message.readInt32BE(at);
    at += 4;
    if (length < 0) fields.push(null);
    else {
      fields.push(message.toString('utf8', at, at + length));
      at += length;
    }
  }
  return fields;
}

/** The statements of the reset, each its own extended-protocol statement in a pipelined hand-over. */
const RESET_STATEMENTS = RESET_SQL.split(';')
  .map((statement) => statement.trim())
  .filter((statement) => statement !== '');

/** Parse, Bind and Execute of one statement, unnamed, no parameters, every row. */
function extendedStatement(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  // Parse: '' name, text, no parameter types; Bind: '' portal, '' statement, no formats or values; Execute: '' portal, no row limit.
  const parse = Buffer.alloc(5 + 1 + text.length + 2);
  parse[0] = FrontendType.Parse;
  parse.writeInt32BE(parse.length - 1, 1);
  text.copy(parse, 6);
  const bind = Buffer.from([FrontendType.Bind, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]);
  const execute = Buffer.from([FrontendType.Execute, 0, 0, 0, 9, 0, 0, 0, 0, 0]);
  return Buffer.concat([parse, bind, execute]);
}

const PIPELINED_RESET = Buffer.concat(RESET_STATEMENTS.map(extendedStatement));
const PIPELINED_COMMIT = extendedStatement('COMMIT');
/** The CommandCompletes a pipelined hand-over is answered with: one per statement (the reset's, the SELECT, the COMMIT). */
export const PIPELINED_HAND_OVER_ANSWERS = RESET_STATEMENTS.length + 2;

/**
 * The hand-over sent in the same write as the client's first messages, so that it costs no round trip
 * of its own: the reset's statements, the SELECT that applies the client's settings and counts the
 * prepared statements, and a COMMIT, all as extended-protocol messages with no Sync between them and
 * the client's. Any error in it (the counts disagree: the SELECT divides by zero; a previous client's
 * statement_timeout cut a statement short) has the server skip everything up to the next Sync, the
 * client's messages too: none of them runs on a session that is not the client's. The COMMIT ends
 * the hand-over's implicit transaction, so that the client's own statements start their own (VACUUM,
 * CREATE INDEX CONCURRENTLY, a ROLLBACK of the client's own transaction leaves the hand-over done).
 */
export function pipelinedHandOver(settings: ReadonlyMap<string, string>, protocolStatements: number): Buffer {
  let bySize = pipelinedHandOvers.get(settings);
  if (!bySize) pipelinedHandOvers.set(settings, (bySize = new Map()));
  let messages = bySize.get(protocolStatements);
  if (!messages) {
    const applied = orderedSettings(settings).map(([name, value]) => `, pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`);
    const select =
      `SELECT pg_catalog.pg_advisory_unlock_all()${applied.join('')}, 1 OPERATOR(pg_catalog./) CASE WHEN s.sql OPERATOR(pg_catalog.=) 0 ` +
      `AND s.protocol OPERATOR(pg_catalog.=) ${protocolStatements} THEN 1 ELSE 0 END FROM (SELECT pg_catalog.count(*) FILTER (WHERE from_sql) AS sql, ` +
      'pg_catalog.count(*) FILTER (WHERE NOT from_sql) AS protocol FROM pg_catalog.pg_prepared_statements) AS s';
    messages = Buffer.concat([PIPELINED_RESET, extendedStatement(select), PIPELINED_COMMIT]);
    // A connection's statements grow one by one to the pool's bound: a few sizes per settings map.
    if (bySize.size < 256) bySize.set(protocolStatements, messages);
  }
  return messages;
}

const pipelinedHandOvers = new WeakMap<ReadonlyMap<string, string>, Map<number, Buffer>>();

/** A simple Query message. */
export function queryMessage(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  const message = Buffer.alloc(5 + text.length);
  message[0] = FrontendType.Query;
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}

/** A server's answers to the gateway's own queries: its rows, its first error, and what it reported of its parameters. */
export interface ExchangeAnswer {
  rows: (string | null)[][];
  error: Buffer | null;
}

/**
 * Sends the gateway's own simple queries on a connection the caller holds and collects the answers
 * up to their ReadyForQuery messages; the connection's ParameterStatus messages are noted on it.
 */
export function exchange(connection: ServerConnection, queries: Buffer[]): Promise<ExchangeAnswer> {
  return new Promise((resolve, reject) => {
    const answer: ExchangeAnswer = { rows: [], error: null };
    let readies = queries.length;
    let rest: Buffer | null = null;
    const previous = connection.listener;
    connection.listener = {
      data: (chunk) => {
        const buffer: Buffer = rest === null ? chunk : Buffer.concat([rest, chunk]);
        const parsed = frames(buffer, 0x7fffffff);
        rest = parsed.rest < buffer.length ? Buffer.from(buffer.subarray(parsed.rest)) : null;
        for (const message of parsed.messages) {
          const type = message[0];
          if (type === BackendType.ParameterStatus) connection.noteParameter(message);
          else if (type === BackendType.ErrorResponse) answer.error ??= Buffer.from(message);
          else if (type === BackendType.DataRow) answer.rows.push(dataRowFields(message));
          else if (type === BackendType.ReadyForQuery && --readies === 0) {
            connection.listener = previous;
            if (rest !== null) previous?.data(rest);
            resolve(answer);
            return;
          }
        }
      },
      closed: () => {
        connection.listener = previous;
        reject(new Error('the server closed a pooled connection during the gateway’s own query'));
      },
    };
    connection.socket.write(queries.length === 1 ? queries[0] : Buffer.concat(queries));
  });
}

/** Why a hand-over did not make the connection the client's: the server's error, or statements that are not the pool's. */
export type HandOverOutcome = { kind: 'ready' } | { kind: 'refused'; error: Buffer } | { kind: 'tainted'; reason: string };

/**
 * Makes `connection` the client's (`state`): a no-op when it already is (the client's own session, which
 * no other client has used since), else the hand-over query, answered before anything of the client's
 * goes there. A connection whose prepared statements are not exactly the pool's is `tainted`: the
 * caller closes it. `extra`: queries of the caller's that follow in the same round trip.
 */
export async function handOver(connection: ServerConnection, state: PooledClientState, extra: Buffer[] = []): Promise<{ outcome: HandOverOutcome; answer: ExchangeAnswer | null }> {
  if (connection.owner === state && extra.length === 0) return { outcome: { kind: 'ready' }, answer: null };
  connection.owner = null;
  const answer = await exchange(connection, [handOverQuery(state.settings()), ...extra]);
  if (answer.error) return { outcome: { kind: 'refused', error: answer.error }, answer };
  const [, sql, protocol] = answer.rows[0] ?? [];
  if (sql !== '0') return { outcome: { kind: 'tainted', reason: `${sql} statements prepared by SQL` }, answer };
  if (protocol !== String(connection.prepared.size)) return { outcome: { kind: 'tainted', reason: `${protocol} protocol statements where the pool lists ${connection.prepared.size}` }, answer };
  connection.owner = state;
  return { outcome: { kind: 'ready' }, answer };
}
