/** What went wrong, in terms a transport can map to its own status codes. */
export type ErrorKind =
  | 'validation'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'bad_gateway'
  | 'unavailable';

/**
 * The base of every error the platform means to show a client. `code` is a stable snake_case
 * string clients can branch on; `message` is safe to show; `cause` is for logs only.
 */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ValidationError extends DomainError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super('validation', code, message, options);
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(code: string, message: string) {
    super('unauthenticated', code, message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(code: string, message: string) {
    super('forbidden', code, message);
  }
}

export class RateLimitedError extends DomainError {
  constructor(
    readonly retryAfterSeconds: number,
    message = 'Too many failed attempts; try again later',
  ) {
    super('rate_limited', 'too_many_attempts', message);
  }
}

export class NotFoundError extends DomainError {
  constructor(code: string, message: string) {
    super('not_found', code, message);
  }
}

export class ConflictError extends DomainError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super('conflict', code, message, options);
  }
}

export class UnavailableError extends DomainError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super('unavailable', code, message, options);
  }
}

/** Something the platform depends on outside itself (an SSO provider) failed or answered wrongly. */
export class BadGatewayError extends DomainError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super('bad_gateway', code, message, options);
  }
}
