import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import Koa, { type Context, type Middleware, type Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { Logger } from 'pino';
import { StructError, validate, type Struct } from 'superstruct';
import {
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  UnauthenticatedError,
  ValidationError,
  requireManagement,
  type TokenScope,
  type Principal,
  type TokenVerifier,
} from '@platform/domain';
import { describeStructError, toApiError } from './api-error.js';
import { buildOpenApiDocument, type OpenApiInfo } from './openapi.js';
import { isRouteResult, type Route } from './route.js';

export interface HttpAppOptions<TScope> {
  routes: readonly Route<TScope>[];
  logger: Logger;
  /** Opens the per-request scope (for example repositories over a forked EntityManager). */
  openScope: () => TScope;
  tokenVerifier: TokenVerifier;
  openapi: OpenApiInfo;
  /** Checks every response body against its route's schema; for tests and development. */
  validateResponses?: boolean;
  /** The largest JSON body accepted. */
  jsonLimit?: string;
  /** Origins whose pages may send cookie-authenticated requests. */
  allowedOrigins?: readonly string[];
  /** The session cookie's name (`auth.session-token`, `__Secure-` prefixed under https). */
  sessionCookieName?: string;
}

export interface RequestState {
  requestId: string;
  log: Logger;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i;

/** Builds the Koa application of a route table: context, errors, body parsing, validation, auth. */
export function createHttpApp<TScope>(options: HttpAppOptions<TScope>): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true;
  const openapi = buildOpenApiDocument(options.routes, options.openapi);
  const parseForm = koaBody({
    json: false,
    urlencoded: true,
    text: false,
    multipart: false,
    formLimit: '16kb',
    parsedMethods: [HttpMethodEnum.POST],
  });
  // Run per operation, after authentication: an anonymous caller's body is never parsed.
  const parseJson = koaBody({
    json: true,
    urlencoded: false,
    text: false,
    multipart: false,
    jsonStrict: true,
    jsonLimit: options.jsonLimit ?? '64kb',
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
  });

  app.use(requestContext(options.logger));
  app.use(errorMapper());

  app.use(async function routeNotFound(ctx: Context, next: Next) {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new NotFoundError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
    }
  });

  const router = new Router();
  router.get('/openapi.json', function serveOpenApi(ctx) {
    ctx.body = openapi;
  });
  for (const route of options.routes) {
    const koaPath = route.path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
    const handler = operationHandler(route, options, route.form ? parseForm : parseJson);
    router.register(koaPath, [route.method], handler, { name: route.operationId });
  }
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  return app;
}

function requestContext(logger: Logger) {
  return async function requestContext(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const started = performance.now();
    const state = ctx.state as RequestState;
    state.requestId = requestId;
    state.log = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      state.log.info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round((performance.now() - started) * 10) / 10 },
        'request',
      );
    }
  };
}

function errorMapper() {
  return async function errorMapper(ctx: Context, next: Next) {
    try {
      await next();
    } catch (error) {
      const { body, expected } = toApiError(error);
      const state = ctx.state as RequestState;
      if (!expected) state.log.error({ err: error }, 'unhandled error');
      ctx.status = body.statusCode;
      ctx.body = body;
      ctx.set('Cache-Control', 'no-store');
      if (error instanceof RateLimitedError) ctx.set('Retry-After', String(error.retryAfterSeconds));
      // A Bearer challenge only where a bearer token is what is missing (not for the session cookie).
      if (body.errorCode === 'insufficient_scope') ctx.set('WWW-Authenticate', 'Bearer error="insufficient_scope"');
      if (body.statusCode === 401 && body.errorCode !== 'invalid_session') ctx.set('WWW-Authenticate', `Bearer error="${body.errorCode === 'invalid_token' ? 'invalid_token' : 'invalid_request'}"`);
    }
  };
}

function check<T>(where: string, struct: Struct<T, any>, value: unknown): T {
  const [error, result] = validate(value, struct, { coerce: true });
  if (error) throw new ValidationError('validation_failed', describeStructError(where, error as StructError));
  return result as T;
}

/** Browsers send Origin on cross-site POSTs; a request naming a foreign origin is refused. */
function assertSameSite(ctx: Context, allowed: readonly string[]): void {
  const origin = ctx.get('origin');
  const referer = ctx.get('referer');
  let from: string | null = null;
  if (origin) from = origin;
  else if (referer) {
    try {
      from = new URL(referer).origin;
    } catch {
      from = 'invalid';
    }
  }
  if (from !== null && !allowed.includes(from)) {
    throw new ForbiddenError('cross_site_request', 'Cookie-authenticated requests must come from an allowed origin');
  }
}

async function authenticate(ctx: Context, verifier: TokenVerifier): Promise<Principal> {
  const header = ctx.get('authorization');
  if (!header) throw new UnauthenticatedError('unauthorized', 'Authorization header with a Bearer token is required');
  const match = BEARER.exec(header);
  if (!match) throw new UnauthenticatedError('invalid_token', 'The Authorization header must be `Bearer <token>`');
  return verifier.verify(match[1]);
}

/**
 * Management tokens (a developer's, a client's) carry scopes: reading needs `api:read`,
 * anything else `api:write`. User tokens come from signing in to a database and carry none.
 */
function requireScope(caller: Principal, method: string): void {
  if (caller.kind === 'user') return;
  const needed: TokenScope = method === 'GET' ? 'api:read' : 'api:write';
  if (!caller.scopes.includes(needed)) {
    throw new ForbiddenError('insufficient_scope', `This operation needs a token with the '${needed}' scope`);
  }
}

function operationHandler<TScope>(route: Route<TScope>, options: HttpAppOptions<TScope>, parse: Middleware) {
  const handler = async (ctx: Context) => {
    const state = ctx.state as RequestState;
    let caller = undefined as unknown as Principal;
    let sessionToken: string | undefined;
    if (route.auth === 'management' || route.auth === 'bearer') {
      caller = await authenticate(ctx, options.tokenVerifier);
      if (route.auth === 'management') requireManagement(caller);
      requireScope(caller, route.method);
    } else if (route.auth === 'session') {
      assertSameSite(ctx, options.allowedOrigins ?? []);
      sessionToken = ctx.cookies.get(options.sessionCookieName ?? 'auth.session-token') || undefined;
      // Without a cookie the caller is anonymous: refuse before reading the body.
      if (!sessionToken) throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
    }
    const params = route.params ? check('path', route.params, { ...ctx.params }) : undefined;
    const query = route.query ? check('query', route.query, { ...ctx.query }) : undefined;
    let body: unknown;
    if (route.form) {
      if (ctx.is('application/x-www-form-urlencoded')) {
        await parse(ctx, async () => {});
        body = ctx.request.body;
      }
    } else if (route.body) {
      const hasBody = ctx.request.length > 0 || ctx.get('transfer-encoding') !== '';
      if (hasBody && !ctx.is('application/json')) {
        throw new ValidationError('unsupported_content_type', 'The request body must be JSON (Content-Type: application/json)');
      }
      if (hasBody) await parse(ctx, async () => {});
      body = check('body', route.body, hasBody ? ctx.request.body : undefined);
    }
    const result = await route.handler({
      params,
      query,
      body,
      caller,
      sessionToken,
      clientAddress: ctx.ip,
      header: (name: string) => ctx.get(name),
      rawQuery: { ...ctx.query },
      scope: options.openScope(),
      requestId: state.requestId,
    });
    const { status, body: responseBody, headers } = isRouteResult(result)
      ? result
      : { status: undefined, body: result, headers: undefined };
    if (options.validateResponses && route.success.schema && (status ?? route.success.status) === route.success.status) {
      const [error] = validate(responseBody, route.success.schema);
      if (error) throw new Error(`response of ${route.operationId} does not match its schema: ${error.message}`);
    }
    ctx.status = status ?? route.success.status;
    for (const [name, value] of Object.entries(headers ?? {})) ctx.set(name, value);
    if (ctx.status !== 204 && responseBody !== undefined) ctx.body = responseBody;
  };
  Object.defineProperty(handler, 'name', { value: route.operationId });
  return handler;
}
