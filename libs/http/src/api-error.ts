import { StructError } from 'superstruct';
import { DomainError, type ErrorKind } from '@platform/domain';
import { databaseUnavailability, UNAVAILABLE_ANSWERS } from './database-unavailable.js';
import { record, text, int } from './schema.js';

/** The body of every error response (SPEC section 7). */
export interface ApiErrorBody {
  errorCode: string;
  message: string;
  statusCode: number;
}

export const ApiErrorSchema = record(
  {
    errorCode: text({ max: 100, description: 'A stable snake_case code clients can branch on, such as `internal_error`' }),
    message: text({ max: 2000 }),
    statusCode: int('The HTTP status'),
  },
  'An error',
);

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  validation: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  bad_gateway: 502,
  unavailable: 503,
};

/** Codes for the 4xx errors Koa and its body parser raise themselves. */
const CODE_BY_HTTP_ERROR: Record<string, string> = {
  'entity.parse.failed': 'malformed_json',
  'entity.too.large': 'payload_too_large',
  'encoding.unsupported': 'unsupported_encoding',
  'request.size.invalid': 'bad_request',
};
const CODE_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  // One code per status: a raw-body parser's 415 (an unsupported charset) reads like the JSON check's.
  415: 'unsupported_content_type',
  501: 'not_implemented',
};

const MESSAGE_BY_CODE: Record<string, string> = {
  malformed_json: 'The request body is not valid JSON (an object or an array)',
  payload_too_large: 'The request body is too large',
  unsupported_encoding: 'The request body has an unsupported content encoding',
  malformed_body: 'The request body does not match its Content-Encoding',
  route_not_found: 'No such route',
  method_not_allowed: 'The route does not accept this method',
  unsupported_content_type: 'The request body has an unsupported content type or charset',
  not_implemented: 'The method is not implemented',
};

const MAX_FAILURES_SHOWN = 5;
const MAX_KEY_SHOWN = 64;

/** Names each failing field, without echoing the (possibly huge) value the client sent. */
export function describeStructError(where: string, error: StructError): string {
  const failures = error.failures();
  const parts = failures.slice(0, MAX_FAILURES_SHOWN).map((failure) => {
    // Keys come from the client: cap each so an absurd key cannot make an absurd message.
    const path = failure.path.map((key) => String(key).slice(0, MAX_KEY_SHOWN));
    const field = path.length > 0 ? `${where}.${path.join('.')}` : where;
    if (failure.type === 'never') return `${field}: unknown field`;
    if (failure.value === undefined && failure.refinement === undefined) return `${field}: is required`;
    if (failure.refinement === 'size') {
      return `${field}: ${failure.message.replace(/ but received.*$/, '').slice(0, 200)}`;
    }
    if (failure.refinement) return `${field}: ${failure.message.slice(0, 200)}`;
    // `oneOf`'s own message lists the allowed values (and never echoes the one sent).
    if (failure.type === 'enums') return `${field}: ${failure.message}`;
    return `${field}: expected ${failure.type}`;
  });
  if (failures.length > MAX_FAILURES_SHOWN) parts.push(`and ${failures.length - MAX_FAILURES_SHOWN} more`);
  return `Invalid request: ${parts.join('; ')}`;
}

/** An answer of the HTTP layer itself that no domain error describes, such as 415. */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string,
    message: string,
  ) {
    super(message);
    this.name = 'HttpStatusError';
  }
}

export interface MappedError {
  body: ApiErrorBody;
  /** True when the error is ours to explain; false when it must be logged as a bug. */
  expected: boolean;
}

export function toApiError(error: unknown): MappedError {
  if (error instanceof DomainError) {
    const statusCode = STATUS_BY_KIND[error.kind];
    return { body: { errorCode: error.code, message: error.message, statusCode }, expected: true };
  }
  if (error instanceof HttpStatusError) {
    return { body: { errorCode: error.errorCode, message: error.message, statusCode: error.status }, expected: true };
  }
  if (error instanceof URIError) {
    return { body: { errorCode: 'bad_request', message: 'Malformed percent-encoding in the path', statusCode: 400 }, expected: true };
  }
  // A body whose Content-Encoding (gzip, deflate, br) does not decode: zlib says so, with no status.
  if (typeof error === 'object' && error !== null && /^(Z_|ERR_ZLIB|ERR__)/.test(String((error as { code?: unknown }).code ?? ''))) {
    return { body: { errorCode: 'malformed_body', message: MESSAGE_BY_CODE.malformed_body, statusCode: 400 }, expected: true };
  }
  // Errors Koa, its router and the body parser raise carry a status; 4xx ones are the client's.
  const httpError = (typeof error === 'object' && error !== null ? error : {}) as { status?: unknown; type?: unknown };
  const status = httpError.status;
  if (typeof status === 'number' && ((status >= 400 && status < 500) || status === 501)) {
    const errorCode =
      (typeof httpError.type === 'string' && CODE_BY_HTTP_ERROR[httpError.type]) ||
      (error instanceof SyntaxError ? 'malformed_json' : CODE_BY_STATUS[status]) ||
      'bad_request';
    return { body: { errorCode, message: MESSAGE_BY_CODE[errorCode] ?? 'Bad request', statusCode: status }, expected: true };
  }
  const unavailability = databaseUnavailability(error);
  if (unavailability) return { body: { ...UNAVAILABLE_ANSWERS[unavailability], statusCode: 503 }, expected: true };
  return {
    body: { errorCode: 'internal_error', message: 'An internal error occurred', statusCode: 500 },
    expected: false,
  };
}

/** 503 answers worth retrying soon, and after how many seconds (Retry-After). */
export const RETRY_AFTER_SECONDS: Readonly<Record<string, number>> = { database_unavailable: 2, database_busy: 1, database_moving: 2, control_plane_unavailable: 2 };
