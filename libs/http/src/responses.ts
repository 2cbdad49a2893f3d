import { validate } from 'superstruct';
import { ApiErrorSchema } from './api-error.js';
import type { ResponseSpec, Route } from './route.js';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: a malformed body, or a field that fails validation',
  401: 'Not authenticated: missing, invalid or expired credentials, or the token of an OAuth client since deleted',
  403: 'Forbidden: the token lacks the scope, or the caller may not do this',
  404: 'Not found, or not visible to the caller',
  409: 'Conflict with the current state',
  413: 'Request body too large',
  415: 'The request body is not JSON (Content-Type must be application/json)',
  429: 'Too many requests',
  500: 'Internal error',
  502: 'An upstream service (an SSO provider) failed or answered wrongly',
  503: 'Unavailable',
};

/** The body's media type as declared; undefined for an answer without a body. */
export function mediaTypeOf(spec: ResponseSpec): string | undefined {
  return spec.contentType ?? (spec.schema ? 'application/json' : undefined);
}

/** An APIError answer at `status`. */
export function apiErrorResponse(status: number): ResponseSpec {
  return { status, description: ERROR_DESCRIPTIONS[status] ?? 'Error', schema: ApiErrorSchema };
}

/**
 * Every answer an operation can give: its own, then the APIErrors it lists, then those the
 * framework gives for it: 400 when it validates or parses input, 401 and 403 when it
 * authenticates, 413 when it reads a body, 415 when that body must be JSON, 500, and 503.
 */
export function declaredResponses(route: Route<any>): ResponseSpec[] {
  const implied = [
    ...(route.params || route.query || route.body || route.form ? [400] : []),
    ...(route.auth === 'none' ? [] : [401, 403]),
    ...(route.body || route.form ? [413] : []),
    ...(route.body ? [415] : []),
    500,
    // Any route may find PostgreSQL out of reach or silent (database_unavailable) or at its connection limit (database_busy), with Retry-After.
    503,
  ];
  const errors = [...new Set([...route.errors, ...implied])].sort((a, b) => a - b);
  return [route.success, ...(route.responses ?? []), ...errors.map(apiErrorResponse)];
}

export interface Answer {
  status: number;
  /** Without parameters (`text/html`, not `text/html; charset=utf-8`); undefined when there is no body. */
  mediaType: string | undefined;
  body: unknown;
}

/**
 * Refuses an answer its operation does not declare (status and media type), or whose body
 * matches none of the schemas declared for them: the document and the code cannot drift apart.
 */
export function checkAnswer(operationId: string, declared: readonly ResponseSpec[], answer: Answer, cause?: unknown): void {
  const candidates = declared.filter((spec) => spec.status === answer.status && mediaTypeOf(spec) === answer.mediaType);
  if (candidates.length === 0) {
    // The error the route threw, if any, travels along as the cause, so the log shows both.
    throw new Error(`${operationId} answered ${answer.status} ${answer.mediaType ?? 'without a body'}, which its route does not declare`, { cause });
  }
  const failures = candidates.flatMap((spec) => (spec.schema ? [validate(answer.body, spec.schema)[0]] : [undefined]));
  if (failures.some((failure) => failure === undefined)) return;
  throw new Error(`response of ${operationId} does not match its schema: ${failures[0]?.message}`);
}
