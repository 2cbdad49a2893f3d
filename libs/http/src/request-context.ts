import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { withDeadline } from '@platform/deadline';
import { RateLimitedError } from '@platform/domain';
import { RETRY_AFTER_SECONDS, toApiError } from './api-error.js';

export interface RequestState {
  requestId: string;
  log: Logger;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * A request id (the caller's when sane) and a logger per request; every request is logged once.
 * With `deadlineMs`, what the request waits for from PostgreSQL (connections, queries, of the
 * control plane and the databases alike) gives up that long after it arrived, and the request
 * answers 503 `database_unavailable` with Retry-After: a server that stopped answering without
 * refusing costs a bounded wait, never a hang. (One middleware for both: each layer is a frame
 * and a promise of every request.)
 */
export function requestContext(logger: Logger, deadlineMs?: number) {
  return async function requestContext(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const started = performance.now();
    const state = ctx.state as RequestState;
    state.requestId = requestId;
    // The request's logger is made when first used: a child logger per request cost the hot read
    // more than its routing, and at LOG_LEVEL=error most requests log nothing.
    let log: Logger | undefined;
    Object.defineProperty(state, 'log', { get: () => (log ??= logger.child({ requestId })), enumerable: true, configurable: true });
    ctx.set('X-Request-Id', requestId);
    try {
      await (deadlineMs === undefined ? next() : withDeadline(deadlineMs, next));
    } finally {
      if (logger.isLevelEnabled('info')) {
        state.log.info(
          { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round((performance.now() - started) * 10) / 10 },
          'request',
        );
      }
    }
  };
}

/** The one place errors become answers: APIError bodies, and unexpected errors logged in full. */
export function answerError(ctx: Context, error: unknown): void {
  const { body, expected } = toApiError(error);
  const state = ctx.state as RequestState;
  if (!expected) state.log.error({ err: error }, 'unhandled error');
  else if (body.errorCode === 'database_unavailable') state.log.warn({ err: error }, 'a database is unavailable');
  ctx.status = body.statusCode;
  ctx.body = body;
  ctx.set('Cache-Control', 'no-store');
  if (error instanceof RateLimitedError) ctx.set('Retry-After', String(error.retryAfterSeconds));
  const retryAfter = RETRY_AFTER_SECONDS[body.errorCode];
  if (body.statusCode === 503 && retryAfter !== undefined) ctx.set('Retry-After', String(retryAfter));
  // A Bearer challenge only where a bearer token is what is missing (not for the session cookie).
  if (body.errorCode === 'insufficient_scope') ctx.set('WWW-Authenticate', 'Bearer error="insufficient_scope"');
  if (body.statusCode === 401 && body.errorCode !== 'invalid_session') ctx.set('WWW-Authenticate', `Bearer error="${body.errorCode === 'invalid_token' ? 'invalid_token' : 'invalid_request'}"`);
}
