import { DEADLINE_EXCEEDED } from '@platform/deadline';

/** Out of connection slots: too many connections (53300), another resource limit (53400). */
const CONNECTION_LIMIT_STATES = /^53[34]00$/;
const CONNECTION_LIMIT_MESSAGES = /too many clients already|remaining connection slots are reserved/i;
/** Nothing answered in time: the request's deadline, a connect or pool checkout timeout. */
const NO_ANSWER_CODES = new Set([DEADLINE_EXCEEDED, 'ETIMEDOUT']);
const NO_ANSWER_MESSAGES = /timeout exceeded when trying to connect|^timeout expired$|due to connection timeout/i;
/**
 * A PostgreSQL that refuses or lost the connection: connection exceptions (class 08), a server
 * shutting down or starting up (57P01, 57P02, 57P03), and the same as Node and pg say it.
 */
const OUT_OF_REACH_STATES = /^(08...|57P0[123])$/;
const OUT_OF_REACH_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);
const OUT_OF_REACH_MESSAGES = /Connection terminated|the database system is (starting up|shutting down)/i;

/**
 * Why a PostgreSQL server cannot serve us now, told by an error (or one it was caused by), or null
 * when the error says nothing of the kind (a bug, a constraint, bad SQL). The client's request was
 * fine and the same request may succeed shortly (503 with Retry-After):
 *   - `connection_limit`: the server refused a connection for want of slots (53300, 53400);
 *   - `no_answer`: nothing answered before the request's deadline or a connect timeout (a server
 *     frozen, cut off, or too slow), which cannot tell which;
 *   - `out_of_reach`: it refused or lost the connection, or is starting up or shutting down.
 */
export type Unavailability = 'connection_limit' | 'no_answer' | 'out_of_reach';

export function databaseUnavailability(error: unknown): Unavailability | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const { code, sqlState, message, name } = current as { code?: unknown; sqlState?: unknown; message?: unknown; name?: unknown };
    const state = typeof sqlState === 'string' ? sqlState : typeof code === 'string' ? code : '';
    const text = typeof message === 'string' ? message : '';
    if (CONNECTION_LIMIT_STATES.test(state) || CONNECTION_LIMIT_MESSAGES.test(text)) return 'connection_limit';
    if (NO_ANSWER_CODES.has(state) || NO_ANSWER_MESSAGES.test(text)) return 'no_answer';
    if (OUT_OF_REACH_STATES.test(state) || OUT_OF_REACH_CODES.has(state) || name === 'ConnectionException' || OUT_OF_REACH_MESSAGES.test(text)) return 'out_of_reach';
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Whether an error says a PostgreSQL server cannot serve us now (databaseUnavailability). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return databaseUnavailability(error) !== null;
}

/** The answer to each: busy at its limit, or unavailable, and a message that says which. */
export const UNAVAILABLE_ANSWERS: Readonly<Record<Unavailability, { errorCode: string; message: string }>> = {
  connection_limit: { errorCode: 'database_busy', message: 'A database is at its connection limit; try again shortly' },
  no_answer: { errorCode: 'database_unavailable', message: 'A database did not answer in time (within the request’s deadline or the connect timeout); try again shortly' },
  out_of_reach: { errorCode: 'database_unavailable', message: 'A database is out of reach (it refused or lost the connection, or is starting or stopping); try again shortly' },
};
