// Making a pool's server connection a client's own. Nothing here reads a client's SQL: whatever a
// previous client did (a function that calls set_config, a DO block that LISTENs or PREPAREs, a trigger
// that takes an advisory lock, a statement put in place of one of the pool's), the hand-over starts
// with DISCARD ALL, PostgreSQL's own reset of everything a session keeps past its transaction (settings
// back to the credential's defaults, role, cursors, LISTEN, advisory locks, temporary tables, sequence
// state, and every prepared statement: the pool prepares its own again where a client needs them),
// then applies the client's settings; the client's messages run only once all of it has succeeded.
import { BackendType, FrontendType } from './message-types.js';
import { frames } from './pooled-messages.js';
import { literal, type PooledClientState } from './pooled-settings.js';
import type { ServerConnection } from './server-pool.js';

/** The role is applied last: settings before it are made as the credential itself. */
function orderedSettings(settings: ReadonlyMap<string, string>): [string, string][] {
  const ordered = [...settings].filter(([name]) => name !== 'role');
  const role = settings.get('role');
  if (role !== undefined) ordered.push(['role', role]);
  return ordered;
}

/**
 * The SELECT that applies a client's settings with set_config (as a `-c` option would: `search_path=a,b`
 * is two schemas), the role last, every name qualified and every value an E'' literal; null when it has none.
 */
export function settingsSql(settings: ReadonlyMap<string, string>): string | null {
  if (settings.size === 0) return null;
  return `SELECT ${orderedSettings(settings)
    .map(([name, value]) => `pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`)
    .join(', ')}`;
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

const PIPELINED_DISCARD = extendedStatement('DISCARD ALL');
const PIPELINED_COMMIT = extendedStatement('COMMIT');

/** A hand-over sent in front of a client's messages, and the CommandCompletes that answer it. */
export interface PipelinedHandOver {
  messages: Buffer;
  answers: number;
}

/**
 * The hand-over sent in the same write as the client's first messages, so that it costs no round trip
 * of its own: DISCARD ALL, the SELECT of the client's settings, and a COMMIT, as extended-protocol
 * statements with no Sync between them and the client's messages. Any error in them (a previous
 * client's statement_timeout cut the reset short, a setting the server refuses) has the server skip
 * everything up to the next Sync, the client's messages too: none of them runs on a session that is not
 * the client's. DISCARD ALL comes first in its pipeline (the previous transaction ended with a Sync),
 * where PostgreSQL takes it; the COMMIT ends the implicit transaction after it, so that the client's
 * statements start their own (VACUUM, CREATE INDEX CONCURRENTLY; the client's ROLLBACK cannot undo
 * the hand-over).
 */
export function pipelinedHandOver(settings: ReadonlyMap<string, string>): PipelinedHandOver {
  let handOver = pipelinedHandOvers.get(settings);
  if (!handOver) {
    const select = settingsSql(settings);
    handOver = select === null ? { messages: Buffer.concat([PIPELINED_DISCARD, PIPELINED_COMMIT]), answers: 2 } : { messages: Buffer.concat([PIPELINED_DISCARD, extendedStatement(select), PIPELINED_COMMIT]), answers: 3 };
    pipelinedHandOvers.set(settings, handOver);
  }
  return handOver;
}

/** By settings map: clients of one login share theirs (pooled-settings.ts), so one hand-over serves them all. */
const pipelinedHandOvers = new WeakMap<ReadonlyMap<string, string>, PipelinedHandOver>();

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

const DISCARD_ALL = queryMessage('DISCARD ALL');

/**
 * Makes a new client's session on `connection` and waits for the answer (a login: the client has sent
 * nothing yet): DISCARD ALL and the client's settings as simple queries, then the caller's `extra`
 * queries in the same round trip. The connection is the client's only when nothing failed.
 */
export async function startClientSession(connection: ServerConnection, state: PooledClientState, extra: Buffer[] = []): Promise<ExchangeAnswer> {
  connection.owner = null;
  connection.prepared.clear();
  const select = settingsSql(state.settings());
  const answer = await exchange(connection, [DISCARD_ALL, ...(select === null ? [] : [queryMessage(select)]), ...extra]);
  if (!answer.error) connection.owner = state;
  return answer;
}
