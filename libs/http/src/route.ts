import type { Struct } from 'superstruct';
import type { ManagementPrincipal, Principal } from '@platform/domain';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/**
 * `none`: anyone. `management`: a developer's bearer token, or a token of a client of the
 * workspace (client_credentials). `bearer`: any of those or a user bearer
 * token (the use case decides what each may do). `session`: the session cookie, from an allowed
 * origin (cross-site requests are refused). `cookie`: the API family's cookies (`nile.session-token`
 * and the CSRF double submit), which the handler reads and checks itself.
 */
export type RouteAuth = 'none' | 'management' | 'bearer' | 'session' | 'cookie';

/** Who called, as each kind of route knows it: a public route has no caller at all. */
export interface CallerByAuth {
  none: object;
  management: { caller: ManagementPrincipal };
  bearer: { caller: Principal };
  /** The session cookie's token; a request without one never reaches the handler. */
  session: { sessionToken: string };
  /** The handler reads the cookies (`header('cookie')`) and decides. */
  cookie: object;
}

/** What every handler gets, whoever called. */
export interface RequestInput<TScope, P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The client's address: the socket's, or what a trusted proxy forwards (client-address.ts). */
  clientAddress: string;
  /** The request's path as the client sent it (for links to other pages of a list). */
  path: string;
  /** A request header ('' when absent). */
  header(name: string): string;
  /** The query string's fields as sent (a repeated field is an array), for protocol routes that validate it themselves. */
  rawQuery: Record<string, string | string[] | undefined>;
  /** The query string exactly as sent, without its `?` ('' when none), for protocol routes that must read its order. */
  queryString: string;
  /** Per-request dependencies (repositories over a forked EntityManager, services). */
  scope: TScope;
  requestId: string;
}

export type RouteInput<TScope, P, Q, B, A extends RouteAuth = RouteAuth> = RequestInput<TScope, P, Q, B> & CallerByAuth[A];

/**
 * One answer an operation can give, as the OpenAPI document shows it. `contentType` defaults to
 * `application/json` when there is a schema; with neither, the answer has no body (204, a redirect).
 */
export interface ResponseSpec {
  status: number;
  description: string;
  contentType?: string;
  schema?: Struct<any, any>;
  /** Headers worth documenting (such as `Location`), each with what it carries. */
  headers?: Record<string, string>;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  /** A header given as an array is sent once per value (Set-Cookie). */
  headers?: Record<string, string | string[]>;
}

/** What a route documents and validates, whoever may call it. */
export interface RouteOperation<P, Q, B> {
  method: HttpMethod;
  /** OpenAPI-style path: `/workspaces/{workspaceSlug}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  params?: Struct<P, any>;
  query?: Struct<Q, any>;
  body?: Struct<B, any>;
  /**
   * The body is form-encoded (`application/x-www-form-urlencoded`) and handed over unvalidated as
   * string fields (or undefined for another content type): for protocols, such as OAuth's token
   * endpoint, whose errors have their own shape.
   */
  form?: boolean;
  /**
   * The `body` may come form-encoded as well as JSON (validated by the same schema, its fields as
   * strings): for the API family's SDK, which sends some bodies as forms.
   */
  formOrJson?: boolean;
  /**
   * The OpenAPI security schemes any one of which authenticates, where the handler accepts more
   * than `auth` says (default: the scheme of `auth`).
   */
  security?: ('sessionCookieAuth' | 'familySessionCookie' | 'jwtBearerAuth')[];
  /**
   * Runs before the body is read (a `cookie` route's own authentication): throwing refuses the
   * request unread, as `session` and `bearer` routes refuse an anonymous caller.
   */
  beforeBody?: (header: (name: string) => string) => void;
  /** The answer the handler gives unless it says otherwise. */
  success: ResponseSpec;
  /** APIError statuses this operation documents; those the framework itself answers are implied. */
  errors: number[];
  /** Every other answer: HTML pages, redirects, errors in a protocol's own shape. */
  responses?: ResponseSpec[];
}

/** How a route authenticates, and the handler that gets what that yields. */
export type RouteHandling<TScope, P, Q, B, A extends RouteAuth> = {
  auth: A;
  handler: (input: RouteInput<TScope, P, Q, B, A>) => Promise<unknown>;
};

/**
 * One row of the route table: it validates the request and documents the operation. The
 * handler returns the response body (or a RouteResult when it sets status or headers); what it
 * is given depends on `auth`.
 */
export type Route<TScope = unknown, P = any, Q = any, B = any> = RouteOperation<P, Q, B> &
  { [A in RouteAuth]: RouteHandling<TScope, P, Q, B, A> }[RouteAuth];

export function defineRoute<TScope, P = undefined, Q = undefined, B = undefined>(
  route: Route<TScope, P, Q, B>,
): Route<TScope, P, Q, B> {
  return route;
}

/** A RouteResult marked as one, so that the framework does not take it for a body. */
export type Responded = RouteResult & { __result: true };

export function isRouteResult(value: unknown): value is Responded {
  return typeof value === 'object' && value !== null && (value as { __result?: unknown }).__result === true;
}

/** Wraps a body with a status or headers, for handlers whose success is not the default. */
export function respond(result: RouteResult): Responded {
  return { ...result, __result: true };
}

/**
 * A route written for another scope, served in this one: its handler gets `pick(scope)`. Its
 * operation (path, schemas, answers) is unchanged, so both apps document it the same way.
 */
export function withScope<S, T, P, Q, B>(route: Route<T, P, Q, B>, pick: (scope: S) => T): Route<S, P, Q, B> {
  const handler = route.handler as (input: RouteInput<T, P, Q, B>) => Promise<unknown>;
  return { ...route, handler: (input: RouteInput<S, P, Q, B>) => handler({ ...input, scope: pick(input.scope) }) } as Route<S, P, Q, B>;
}
