import type { Struct } from 'superstruct';
import type { Principal } from '@platform/domain';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/**
 * `none`: anyone. `management`: a developer's bearer token, or a token of a client of the
 * workspace (client_credentials). `bearer`: any of those or a user bearer
 * token (the use case decides what each may do). `session`: the session cookie, from an allowed
 * origin (cross-site requests are refused).
 */
export type RouteAuth = 'none' | 'management' | 'bearer' | 'session';

export interface RouteInput<TScope, P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Set on routes with `developer` or `bearer` auth. */
  caller: Principal;
  /** The session cookie's token, on routes with `session` auth. */
  sessionToken: string | undefined;
  /** The client's address (the socket's; no proxy headers are trusted). */
  clientAddress: string;
  /** A request header ('' when absent). */
  header(name: string): string;
  /** The query string's fields as sent (a repeated field is an array), for protocol routes that validate it themselves. */
  rawQuery: Record<string, string | string[] | undefined>;
  /** Per-request dependencies (repositories over a forked EntityManager, services). */
  scope: TScope;
  requestId: string;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * One row of the route table: it validates the request and documents the operation. The
 * handler returns the response body (or a RouteResult when it sets status or headers).
 */
export interface Route<TScope = unknown, P = any, Q = any, B = any> {
  method: HttpMethod;
  /** OpenAPI-style path: `/workspaces/{workspaceSlug}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuth;
  params?: Struct<P, any>;
  query?: Struct<Q, any>;
  body?: Struct<B, any>;
  /**
   * The body is form-encoded (`application/x-www-form-urlencoded`) and handed over unvalidated as
   * string fields (or undefined for another content type): for protocols, such as OAuth's token
   * endpoint, whose errors have their own shape.
   */
  form?: boolean;
  /** The success status and its body (none for 204). */
  success: { status: number; description: string; schema?: Struct<any, any>; contentType?: string };
  /** Error statuses this operation documents; 400 and 500 are implied for every operation. */
  errors: number[];
  handler: (input: RouteInput<TScope, P, Q, B>) => Promise<unknown>;
}

export function defineRoute<TScope, P = undefined, Q = undefined, B = undefined>(
  route: Route<TScope, P, Q, B>,
): Route<TScope, P, Q, B> {
  return route;
}

export function isRouteResult(value: unknown): value is RouteResult & { __result: true } {
  return typeof value === 'object' && value !== null && (value as { __result?: unknown }).__result === true;
}

/** Wraps a body with a status or headers, for handlers whose success is not the default. */
export function respond(result: RouteResult): RouteResult & { __result: true } {
  return { ...result, __result: true };
}
