import type { Context, Middleware } from 'koa';
import type { BlockList } from 'node:net';
import { validate, type StructError, type Struct } from 'superstruct';
import {
  ForbiddenError,
  UnauthenticatedError,
  ValidationError,
  requireManagement,
  type Principal,
  type TokenScope,
  type TokenVerifier,
} from '@platform/domain';
import { describeStructError, HttpStatusError, toApiError } from './api-error.js';
import type { RequestState } from './request-context.js';
import { checkAnswer, declaredResponses, type Answer } from './responses.js';
import { isRouteResult, type RequestInput, type Route } from './route.js';
import { assertJsonDepth } from './json-depth.js';
import { clientAddressOf, forwardedPrefixOf, trustedProxyList } from './client-address.js';
import { JSON_SLICE_ITEMS, LongPageTurns, stringifyInSlices } from './json-slices.js';

export interface OperationOptions<TScope> {
  /** Opens the per-request scope (for example repositories over a forked EntityManager). */
  openScope: () => TScope;
  tokenVerifier: TokenVerifier;
  /** Checks every answer against its route's declared responses; for tests and development. */
  validateResponses?: boolean;
  /** Origins whose pages may send cookie-authenticated requests. */
  allowedOrigins?: readonly string[];
  /** The session cookie's name (`auth.session-token`, `__Secure-` prefixed under https). */
  sessionCookieName?: string;
  /** Proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES); none by default. */
  trustedProxies?: readonly string[];
}

const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i;

/** The Koa handler of one route: authenticate, read and validate the request, run the handler, answer. */
export function operationHandler<TScope>(route: Route<TScope>, options: OperationOptions<TScope>, parse: Middleware) {
  const declared = declaredResponses(route);
  const checks = { path: new RecentChecks(), query: new RecentChecks() };
  const proxies = options.trustedProxies?.length ? trustedProxyList(options.trustedProxies) : undefined;
  const handler = (ctx: Context) => (asksForLongPage(ctx) ? LONG_PAGES.take(() => serveRoute(ctx)) : servedBeside(serveRoute(ctx)));
  const serveRoute = async (ctx: Context) => {
    let result: unknown;
    try {
      result = await invoke(route, ctx, options, () => readRequest(ctx, route, options, parse, proxies, checks));
    } catch (error) {
      const { body } = toApiError(error);
      if (options.validateResponses) checkAnswer(route.operationId, declared, { status: body.statusCode, mediaType: 'application/json', body }, error);
      throw error;
    }
    writeAnswer(ctx, route, result, forwardedPrefixOf(ctx.socket.remoteAddress ?? '', ctx.get('x-forwarded-prefix') || undefined, proxies));
    if (options.validateResponses) {
      try {
        checkAnswer(route.operationId, declared, answerOf(ctx));
      } catch (error) {
        // The 500 that follows must not carry what the refused answer set (a cookie, a Location).
        for (const name of Object.keys(ctx.response.headers)) if (name !== 'x-request-id') ctx.remove(name);
        throw error;
      }
    }
    // A long list (a page of up to 1,000) is written a slice at a time, letting other requests in.
    // Any other JSON answer is written as text here, once: left an object, it was serialized twice,
    // since compression's size threshold asks Koa for its length, which serializes it to measure.
    if (Array.isArray(ctx.body) && ctx.body.length > JSON_SLICE_ITEMS) {
      const text = await stringifyInSlices(ctx.body);
      ctx.body = text;
      ctx.type = 'application/json';
    } else if (isJsonValue(ctx.body)) {
      // Koa keeps the Content-Type the object set (JSON, or a route's own) and sets the length.
      ctx.body = JSON.stringify(ctx.body);
    }
  };
  Object.defineProperty(handler, 'name', { value: route.operationId });
  return handler;
}

/** A body Koa would serialize as JSON: a plain object or an array (not a Buffer, a stream, a Blob...). */
function isJsonValue(body: unknown): body is object {
  if (Array.isArray(body)) return true;
  if (typeof body !== 'object' || body === null) return false;
  const prototype = Object.getPrototypeOf(body) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** This process's requests that are not for long pages, being served now. */
let shortInFlight = 0;

/** Counts a request among the short ones in flight until it is answered. */
async function servedBeside(serving: Promise<void>): Promise<void> {
  shortInFlight += 1;
  try {
    await serving;
  } finally {
    shortInFlight -= 1;
  }
}

/** This process's requests for long pages: served one at a time, yielding to short ones in flight. */
const LONG_PAGES = new LongPageTurns(() => shortInFlight);

/** A request that asks for a page longer than a slice. */
function asksForLongPage(ctx: Context): boolean {
  const limit = Number(ctx.query.limit);
  return Number.isFinite(limit) && limit > JSON_SLICE_ITEMS;
}

/** Authenticates as the route says, before the body is read: an anonymous caller's body is never parsed. */
async function invoke<TScope>(
  route: Route<TScope>,
  ctx: Context,
  options: OperationOptions<TScope>,
  read: () => Promise<RequestInput<TScope, unknown, unknown, unknown>>,
): Promise<unknown> {
  switch (route.auth) {
    case 'none':
      return route.handler(await read());
    case 'cookie':
      route.beforeBody?.((name) => ctx.get(name));
      return route.handler(await read());
    case 'session': {
      const sessionToken = sessionCookie(ctx, options);
      return route.handler({ ...(await read()), sessionToken });
    }
    case 'management': {
      const caller = requireManagement(await bearerCaller(ctx, options.tokenVerifier));
      requireScope(caller, route.method);
      return route.handler({ ...(await read()), caller });
    }
    case 'bearer': {
      const caller = await bearerCaller(ctx, options.tokenVerifier);
      requireScope(caller, route.method);
      return route.handler({ ...(await read()), caller });
    }
  }
}

async function readRequest<TScope>(
  ctx: Context,
  route: Route<TScope>,
  options: OperationOptions<TScope>,
  parse: Middleware,
  proxies: BlockList | undefined,
  checks: { path: RecentChecks; query: RecentChecks },
): Promise<RequestInput<TScope, unknown, unknown, unknown>> {
  const params = route.params ? checks.path.check(ctx.path, () => check('path', route.params!, { ...ctx.params })) : undefined;
  const query = route.query ? checks.query.check(ctx.querystring, () => check('query', route.query!, { ...ctx.query })) : undefined;
  const body = await readBody(ctx, route, parse);
  return {
    params,
    query,
    body,
    clientAddress: clientAddressOf(ctx.socket.remoteAddress ?? '', ctx.get('x-forwarded-for') || undefined, proxies),
    path: ctx.path,
    header: (name: string) => ctx.get(name),
    rawQuery: { ...ctx.query },
    queryString: ctx.querystring,
    scope: options.openScope(),
    requestId: (ctx.state as RequestState).requestId,
  };
}

async function readBody(ctx: Context, route: Route<any>, parse: Middleware): Promise<unknown> {
  if (route.form) {
    if (!ctx.is('application/x-www-form-urlencoded')) return undefined;
    await parse(ctx, async () => {});
    return ctx.request.body;
  }
  if (!route.body) return undefined;
  const hasBody = ctx.request.length > 0 || ctx.get('transfer-encoding') !== '';
  const asForm = route.formOrJson === true && ctx.is('application/x-www-form-urlencoded') !== false;
  if (hasBody && !asForm && !ctx.is('application/json')) {
    throw new HttpStatusError(415, 'unsupported_content_type', 'The request body must be JSON (Content-Type: application/json)');
  }
  if (hasBody) {
    await parse(ctx, async () => {});
    assertJsonDepth(ctx.request.body);
  }
  return check('body', route.body, hasBody ? (asForm ? { ...(ctx.request.body as object) } : ctx.request.body) : undefined);
}

/** How many checked values one route keeps; when full it starts again (a scan of many paths gains nothing from any). */
const RECENT_CHECKS = 512;

/**
 * A route's path parameters (or query) checked for recent paths (query strings): the same text
 * always checks alike, and a hot read repeats a few. Checking them anew (superstruct with coercion)
 * was a twentieth of the API's CPU on the hot read. Only values that passed are kept; each use
 * gets its own copy.
 */
class RecentChecks {
  private readonly passed = new Map<string, object>();

  check<T>(text: string, checkNow: () => T): T {
    const known = this.passed.get(text);
    if (known) return { ...known } as T;
    const checked = checkNow();
    if (typeof checked === 'object' && checked !== null) {
      if (this.passed.size >= RECENT_CHECKS) this.passed.clear();
      this.passed.set(text, { ...checked });
    }
    return checked;
  }
}

function check<T>(where: string, struct: Struct<T, any>, value: unknown): T {
  const [error, result] = validate(value, struct, { coerce: true });
  if (error) throw new ValidationError('validation_failed', describeStructError(where, error as StructError));
  return result as T;
}

/** Writes a handler's result; `prefix` (a trusted proxy's X-Forwarded-Prefix) goes in front of the paths it hands out. */
function writeAnswer(ctx: Context, route: Route<any>, result: unknown, prefix: string): void {
  const { status, body, headers } = isRouteResult(result) ? result : { status: undefined, body: result, headers: undefined };
  for (const [name, value] of Object.entries(headers ?? {})) ctx.set(name, prefix ? withPrefix(name, value, prefix) : value);
  // Without this Koa would answer a body-less 303 or 200 with its status text as text/plain.
  ctx.body = body === undefined ? null : body;
  ctx.status = status ?? route.success.status;
}

/** A Location or Link that names a path on this server (`/...`, `</...>`), with the proxy's prefix in front. */
function withPrefix<T extends string | string[]>(name: string, value: T, prefix: string): T | string {
  if (typeof value !== 'string') return value;
  const header = name.toLowerCase();
  if (header === 'location' && /^\/(?!\/)/.test(value)) return prefix + value;
  if (header === 'link') return value.replace(/^<\/(?!\/)/, `<${prefix}/`);
  return value;
}

function answerOf(ctx: Context): Answer {
  const hasBody = ctx.body !== null && ctx.body !== undefined;
  return { status: ctx.status, mediaType: hasBody ? ctx.response.type || undefined : undefined, body: ctx.body };
}

async function bearerCaller(ctx: Context, verifier: TokenVerifier): Promise<Principal> {
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

/** The session cookie, from an allowed origin; without one the caller is anonymous and refused before the body is read. */
function sessionCookie(ctx: Context, options: OperationOptions<unknown>): string {
  assertSameSite(ctx, options.allowedOrigins ?? []);
  const token = ctx.cookies.get(options.sessionCookieName ?? 'auth.session-token');
  if (!token) throw new UnauthenticatedError('invalid_session', 'A session cookie is required');
  return token;
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
