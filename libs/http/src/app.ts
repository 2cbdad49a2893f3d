import Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import compress from 'koa-compress';
import type { Logger } from 'pino';
import { NotFoundError } from '@platform/domain';
import { docsRoutes, type SiteIndex } from './docs.routes.js';
import { buildOpenApiDocument, type OpenApiInfo } from './openapi.js';
import { operationHandler, type OperationOptions } from './operation.js';
import { answerError, requestContext } from './request-context.js';
import type { Route } from './route.js';

export interface HttpAppOptions<TScope> extends OperationOptions<TScope> {
  routes: readonly Route<TScope>[];
  logger: Logger;
  openapi: OpenApiInfo;
  /** With it, the app also serves `GET /` (this index), `GET /docs` and the docs page's assets, in its OpenAPI document too. */
  site?: SiteIndex;
  /** The largest JSON body accepted. */
  jsonLimit?: string;
  /** How long a request's waits on PostgreSQL may last in all, from its arrival (DB_REQUEST_DEADLINE_MS); none when absent. */
  deadlineMs?: number;
}

/** An unread rest of a body up to this size is read and dropped by Node, and the connection kept: cheaper than a new one. */
const UNREAD_BODY_KEPT_BYTES = 64 * 1024;

/**
 * Every answer's last word, in one middleware (each layer is a frame and a promise of every
 * request): errors become APIError answers (`answerError`), as does a request no route took (404,
 * 405 with its Allow header, 501); answers that must not be stored (tokens, secrets, pages with
 * forms and cookies, errors) are sent uncompressed, since a compressed secret beside something the
 * client chose leaks through the size (BREACH); and an answer given before a large request body was
 * read to its end (413 mid-upload, a 401 or 403 that refuses before parsing) ends its connection.
 * Kept open, the server would first have to read and discard the rest of the body, and a
 * keep-alive client's next request on that connection waited behind it (6 s for a refused 10 MB
 * body). A body of unknown length (chunked) counts as large.
 */
async function answerEnvelope(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.body === undefined) refuseUnmatched(ctx);
  } catch (error) {
    answerError(ctx, error);
  }
  if (/\bno-store\b/.test(ctx.response.get('Cache-Control'))) ctx.compress = false;
  if (ctx.req.complete) return;
  const length = ctx.req.headers['content-length'];
  const large = ctx.req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) > UNREAD_BODY_KEPT_BYTES);
  if (large) ctx.set('Connection', 'close');
}

/** Compression (gzip, deflate or br at quality 4, for bodies over 1 kB, as a stream) for clients that ask for it. */
function compressWhenAsked() {
  const compression = compress({ threshold: 1024 });
  return function compressWhenAsked(ctx: Context, next: Next) {
    // A client that names no encoding gets the body as it is: no Vary, no negotiation.
    if (!ctx.get('accept-encoding')) return next();
    return compression(ctx, next);
  };
}

/** Builds the Koa application of a route table: context, errors, body parsing, validation, auth. */
export function createHttpApp<TScope>(options: HttpAppOptions<TScope>): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true;
  const routes: readonly Route<TScope>[] = options.site ? [...options.routes, ...(docsRoutes(options.openapi, options.site) as Route<TScope>[])] : options.routes;
  const openapi = buildOpenApiDocument(routes, options.openapi);
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

  const parseEither = koaBody({
    json: true,
    urlencoded: true,
    text: false,
    multipart: false,
    jsonStrict: true,
    jsonLimit: options.jsonLimit ?? '64kb',
    formLimit: '16kb',
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
  });

  app.use(requestContext(options.logger, options.deadlineMs));
  app.use(compressWhenAsked());
  app.use(answerEnvelope);

  const router = new Router();
  router.get('/openapi.json', function serveOpenApi(ctx) {
    ctx.body = openapi;
  });
  for (const route of routes) {
    const koaPath = route.path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
    router.register(koaPath, [route.method], operationHandler(route, options, route.form ? parseForm : route.formOrJson ? parseEither : parseJson), { name: route.operationId });
  }
  app.use(router.routes());
  // Not thrown: answered with an Allow header, which `answerEnvelope` keeps while it writes the APIError.
  app.use(router.allowedMethods());
  return app;
}

/** No route (404), a method the path does not take (405), or one no route takes (501), as APIErrors. */
function refuseUnmatched(ctx: Context): void {
  if (ctx.status === 404) throw new NotFoundError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
  if (ctx.status === 405 || ctx.status === 501) ctx.throw(ctx.status);
}
