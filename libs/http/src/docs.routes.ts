import { NotFoundError } from '@platform/domain';
import { docsAssets } from './docs-assets.js';
import { assetAnswer } from './hashed-assets.js';
import { escapeHtml } from './html.js';
import type { OpenApiInfo } from './openapi.js';
import { defineRoute, respond, type ResponseSpec, type Route } from './route.js';
import { record, text } from './schema.js';

/** A link of the index, `GET /`: `rel` is its key in the JSON answer, `title` its words on the HTML page. */
export interface IndexLink {
  rel: string;
  href: string;
  title: string;
}

/** What `GET /` lists beside the app's own docs page and OpenAPI document. */
export interface SiteIndex {
  links: IndexLink[];
  /** Sentences for people, on the HTML page only ("A web console is coming."). */
  notes?: string[];
}

/** The page and the index name the current hashes: a browser asks again (a 200 of a few hundred bytes). */
const REVALIDATE = 'no-cache';

export const PAGE_HEADERS = {
  'Cache-Control': REVALIDATE,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
};

/**
 * The docs page's policy: scripts and styles from this origin only (no inline script, no eval),
 * images from here or `data:` (Swagger UI's icons are data URIs in its stylesheet), requests to
 * this origin and to the servers the OpenAPI document names (the "Try it out" calls), nothing else.
 */
export function docsContentSecurityPolicy(serverOrigins: readonly string[]): string {
  const connect = ["'self'", ...new Set(serverOrigins)].join(' ');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${connect}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const INDEX_POLICY = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Which answer an Accept header prefers: HTML only when it ranks text/html above JSON (a browser);
 * `*\/*`, no header, or a tie (curl, fetch, SDKs) get JSON.
 */
export function prefersHtml(accept: string): boolean {
  let html = 0;
  let json = 0;
  for (const range of accept.split(',')) {
    const [type, ...parameters] = range.trim().toLowerCase().split(';');
    const qParameter = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith('q='));
    const q = qParameter === undefined ? 1 : Number(qParameter.slice(2));
    if (!Number.isFinite(q)) continue;
    const mediaType = type.trim();
    if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') html = Math.max(html, q);
    else if (mediaType === 'text/*') html = Math.max(html, Math.min(q, 0.999));
    else if (mediaType === 'application/json' || mediaType === 'application/*' || mediaType === '*/*') json = Math.max(json, q);
  }
  return html > json;
}

/** A path relative to the page at `requestPath` that reaches `/target` (prefix-stripping proxies keep working). */
export function fromPage(requestPath: string, target: string): string {
  const depth = requestPath.split('/').length - 2;
  return '../'.repeat(Math.max(depth, 0)) + target;
}

function docsPage(info: OpenApiInfo, requestPath: string): string {
  const assets = docsAssets();
  const to = (target: string) => escapeHtml(fromPage(requestPath, target));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info.title)}: API reference</title>
<link rel="icon" type="image/png" href="${to(`docs/assets/${assets.icon.name}`)}">
<link rel="stylesheet" href="${to(`docs/assets/${assets.swaggerStyle.name}`)}">
</head>
<body>
<noscript><p>This reference needs JavaScript. The OpenAPI document it shows is <a href="${to('openapi.json')}">openapi.json</a>.</p></noscript>
<div id="swagger-ui" data-openapi="${to('openapi.json')}"></div>
<script src="${to(`docs/assets/${assets.swaggerScript.name}`)}"></script>
<script src="${to(`docs/assets/${assets.startScript.name}`)}"></script>
</body>
</html>
`;
}

function indexPage(info: OpenApiInfo, links: IndexLink[], notes: readonly string[], requestPath: string): string {
  const items = links.map((link) => `<li><a href="${escapeHtml(link.href)}">${escapeHtml(link.title)}</a>: <code>${escapeHtml(link.href)}</code></li>`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info.title)}</title>
<link rel="icon" type="image/png" href="${escapeHtml(fromPage(requestPath, `docs/assets/${docsAssets().icon.name}`))}">
<link rel="stylesheet" href="${escapeHtml(fromPage(requestPath, `docs/assets/${docsAssets().siteStyle.name}`))}">
</head>
<body>
<h1>${escapeHtml(info.title)}</h1>
<p class="version">Version ${escapeHtml(info.version)}</p>
<ul>
${items.join('\n')}
</ul>
${notes.map((note) => `<p>${escapeHtml(note)}</p>`).join('\n')}
</body>
</html>
`;
}

export const htmlAnswer = (status: number, description: string): ResponseSpec => ({ status, description, contentType: 'text/html' });

/**
 * `GET /` (an index: HTML for a browser, JSON otherwise), `GET /docs` (an interactive reference
 * of this app's own /openapi.json, Swagger UI from the npm package swagger-ui-dist, served from
 * this process: no CDN) and `GET /docs/assets/{file}` (its scripts and stylesheets, under hashed
 * names, cached for a year). `info` is the app's OpenAPI info: its first server is the address
 * the links start with.
 */
export function docsRoutes(info: OpenApiInfo, site: SiteIndex): Route<unknown>[] {
  const base = (info.servers[0]?.url ?? '').replace(/\/+$/, '');
  const links: IndexLink[] = [
    { rel: 'docs', href: `${base}/docs`, title: 'API reference (interactive)' },
    { rel: 'openapi', href: `${base}/openapi.json`, title: 'OpenAPI document' },
    ...site.links,
  ];
  const IndexSchema = record(
    {
      title: text({ max: 200, description: 'What this service is' }),
      version: text({ max: 100, description: 'The version of its OpenAPI document' }),
      links: record(
        Object.fromEntries(links.map((link) => [link.rel, text({ max: 2000, description: link.title })])),
        'Where to go next, by name: absolute URLs',
      ),
    },
    'This service, and where its documentation and neighbours are',
  );
  const policy = docsContentSecurityPolicy(info.servers.map((server) => new URL(server.url).origin));
  return [
    defineRoute<unknown>({
      method: 'GET',
      path: '/',
      operationId: 'getIndex',
      summary: 'Where to start: the docs page, the OpenAPI document and related services',
      description: 'HTML when the Accept header ranks `text/html` above JSON (a browser); JSON otherwise.',
      tags: ['docs'],
      auth: 'none',
      success: { status: 200, description: 'The index, as JSON', schema: IndexSchema },
      responses: [htmlAnswer(200, 'The index, as an HTML page for a browser')],
      errors: [],
      handler: async ({ header, path }) => {
        const headers = { ...PAGE_HEADERS, Vary: 'Accept' };
        if (!prefersHtml(header('accept'))) {
          return respond({ body: { title: info.title, version: info.version, links: Object.fromEntries(links.map((link) => [link.rel, link.href])) }, headers });
        }
        const body = indexPage(info, links, site.notes ?? [], path);
        return respond({ body, headers: { ...headers, 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': INDEX_POLICY } });
      },
    }),
    defineRoute<unknown>({
      method: 'GET',
      path: '/docs',
      operationId: 'getDocsPage',
      summary: 'The interactive API reference (Swagger UI) of this service’s OpenAPI document',
      description:
        'Operations can be tried from the page: "Authorize" takes a bearer token (`jwtBearerAuth`); the session cookie ' +
        '(`sessionCookieAuth`) is the browser’s own, set by signing in from the page. Its files are served from this ' +
        'process under hashed names; the page works offline.',
      tags: ['docs'],
      auth: 'none',
      success: htmlAnswer(200, 'The page'),
      errors: [],
      handler: async ({ path }) =>
        respond({ body: docsPage(info, path), headers: { ...PAGE_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': policy } }),
    }),
    defineRoute<unknown, { file: string }>({
      method: 'GET',
      path: '/docs/assets/{file}',
      operationId: 'getDocsAsset',
      summary: 'A script, stylesheet or icon of the docs page and the index, under a hashed name',
      description: 'Cached for a year (`immutable`): a changed file has a new name, which the page names.',
      tags: ['docs'],
      auth: 'none',
      params: record({ file: text({ max: 200, description: 'The hashed file name, as the page names it' }) }),
      success: { status: 200, description: 'A script', contentType: 'text/javascript' },
      responses: [
        { status: 200, description: 'A stylesheet', contentType: 'text/css' },
        { status: 200, description: 'The icon', contentType: 'image/png' },
      ],
      errors: [404],
      handler: async ({ params, header }) => {
        const asset = docsAssets().byName.get(params.file);
        if (!asset) throw new NotFoundError('asset_not_found', `No docs asset named '${params.file}' (the page names the current ones)`);
        return assetAnswer(asset, header('accept-encoding'));
      },
    }),
  ];
}
