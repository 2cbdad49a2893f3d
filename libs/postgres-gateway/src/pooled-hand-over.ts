// Making a pool's server connection a client's own, and learning from the server what a client's
// session holds. Nothing here reads a client's SQL: whatever a previous client did (a function that
// calls set_config, a DO block that LISTENs, a trigger that takes an advisory lock), the hand-over
// resets everything a session keeps past its transaction, applies the client's settings, and has the
// server count its prepared statements, before any message of the client goes to that connection.
import { BackendType, FrontendType } from './message-types.js';
import { frames } from './pooled-messages.js';
import { PLATFORM_SETTINGS, isSettingName, type PooledClientState } from './pooled-settings.js';
import type { ServerConnection } from './server-pool.js';

/**
 * What any earlier client may have left on a server session, undone: its settings (RESET ALL, which
 * leaves the role alone, hence RESET ROLE: back to the credential's defaults), open cursors (WITH HOLD
 * ones too), LISTEN, temporary tables and sequence state; the advisory locks and the count of prepared
 * statements come in the SELECT that follows. Not DEALLOCATE ALL: the pool's protocol-level
 * statements are shared by its clients (the count proves none of a client's own is left).
 */
export const RESET_SQL = 'RESET ALL; RESET ROLE; CLOSE ALL; UNLISTEN *; DISCARD TEMP; DISCARD SEQUENCES;';

/** A string literal that means the same whatever standard_conforming_strings is. */
const literal = (value: string): string => `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

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

/**
 * What the server says a client's session holds after a transaction that set or reset something:
 * every setting whose value comes from the session (SET, set_config), the platform's own settings and
 * the client's known ones (custom settings are listed nowhere: the server is asked for them by name),
 * and the role.
 */
export function reportedSettingsSql(known: Iterable<string>): string {
  const names = [...new Set([...PLATFORM_SETTINGS, ...known])].filter((name) => name !== 'role' && isSettingName(name));
  return (
    "SELECT name, pg_catalog.current_setting(name) FROM pg_catalog.pg_settings WHERE source OPERATOR(pg_catalog.=) 'session' " +
    `UNION ALL SELECT n, pg_catalog.current_setting(n, true) FROM pg_catalog.unnest(ARRAY[${names.map(literal).join(', ')}]::pg_catalog.text[]) AS n ` +
    "UNION ALL SELECT 'role', pg_catalog.current_setting('role');"
  );
}

/** The settings of reportedSettingsSql's rows, in the order the client's were applied first (a custom one set to nothing, or never, is left out). */
export function readReportedSettings(rows: (string | null)[][], before: ReadonlyMap<string, string>): Map<string, string> {
  const reported = new Map<string, string>();
  for (const [name, value] of rows) {
    if (name === null || value === null) continue;
    const key = name.toLowerCase();
    if (key === 'role' ? value === 'none' : value === '' && key.includes('.')) continue;
    reported.set(key, value);
  }
  const ordered = new Map<string, string>();
  for (const name of before.keys()) if (reported.has(name)) ordered.set(name, reported.get(name)!);
  for (const [name, value] of reported) if (!ordered.has(name)) ordered.set(name, value);
  return ordered;
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
