import { DEADLINE_EXCEEDED } from '@platform/deadline';

/**
 * SQLSTATEs of a PostgreSQL that refuses or lost the connection: connection exceptions (class 08),
 * too many connections (53300) and other resource limits (53400), and a server shutting down or
 * starting up (57P01, 57P02, 57P03).
 */
const UNAVAILABLE_STATES = /^(08...|53300|53400|57P0[123])$/;
/** The same, as Node and pg say it without a SQLSTATE, and a server silent past the request's deadline. */
const UNAVAILABLE_CODES = new Set([DEADLINE_EXCEEDED, 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|too many clients already|the database system is (starting up|shutting down)/i;

/**
 * Whether an error (or one it was caused by) says a PostgreSQL server cannot serve us now: the
 * client's request was fine, and the same request may succeed shortly (503 with Retry-After). A
 * server that answered nothing before the request's deadline (frozen, or cut off) is one of them.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const { code, sqlState, message, name } = current as { code?: unknown; sqlState?: unknown; message?: unknown; name?: unknown };
    if (typeof sqlState === 'string' && UNAVAILABLE_STATES.test(sqlState)) return true;
    if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_CODES.has(code))) return true;
    if (name === 'ConnectionException') return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
