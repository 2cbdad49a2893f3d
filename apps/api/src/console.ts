import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exactRedirectUri, NotFoundError } from '@platform/domain';
import { assetAnswer, defineRoute, docsAssets, escapeHtml, fromPage, hashedAsset, htmlAnswer, PAGE_HEADERS, record, respond, text, type HashedAsset, type Route } from '@platform/http';
import { ensureFirstPartyClient, type MikroORM } from '@platform/persistence';

/** The console's first-party public client: no secret (a page cannot keep one), PKCE S256 required. */
export const CONSOLE_CLIENT_ID = 'platform-console';
const CONSOLE_CLIENT_NAME = 'Platform web console';

/**
 * Where the console's sign-in comes back to: the page itself, at the API's public address. On a
 * loopback address without a port (http://localhost) the port is written out (:80): the token
 * service lets a loopback URI registered without a port match any port (RFC 8252, for command-line
 * tools), and the console's codes must not go to whatever else listens on this machine.
 */
export function consoleRedirectUri(publicBaseUrl: string): string {
  return exactRedirectUri(`${publicBaseUrl.replace(/\/+$/, '')}/console`);
}

/**
 * Registers the console's client with the token service (the control plane's oauth_clients) at
 * start, with this API's redirect URI added to those it has: the URI depends on PUBLIC_BASE_URL,
 * a setting, so no migration can carry it. Both token endpoints (apps/oauth's and this API's)
 * see the change through the client-change notifications.
 */
export function registerConsoleClient(orm: MikroORM, publicBaseUrl: string): Promise<boolean> {
  return ensureFirstPartyClient(orm, { id: CONSOLE_CLIENT_ID, name: CONSOLE_CLIENT_NAME, redirectUri: consoleRedirectUri(publicBaseUrl) });
}

export interface ConsoleAssets {
  script: HashedAsset;
  style: HashedAsset;
  byName: Map<string, HashedAsset>;
}

/** The folder holding apps/console, looked for upwards from this module (apps/api/src under tsx, dist/apps/api when built). */
function consoleSourceDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'apps', 'console', 'src');
    if (existsSync(join(candidate, 'main.tsx'))) return candidate;
  }
  throw new Error('apps/console/src/main.tsx not found above the API’s module: the console cannot be built');
}

let built: Promise<ConsoleAssets> | undefined;

/** Where the API's build (`nx build api`) puts the console's bundle: beside the built module. */
export const BUILT_CONSOLE_DIR = 'console';
const BUILT_FILES = { script: 'console.js', style: 'console.css' };

/**
 * The console's script and stylesheet, bundled from apps/console and its npm packages (Preact,
 * uPlot) by esbuild, minified. A built API (`node dist/apps/api/main.js`) serves the bundle its
 * build wrote beside it; under tsx (`npm start`, the tests) there is no build step, and the bundle
 * is made in memory once per process (about 0.2 s at start). A failed build fails the start.
 */
export function consoleAssets(): Promise<ConsoleAssets> {
  built ??= (async () => {
    const prebuilt = join(dirname(fileURLToPath(import.meta.url)), BUILT_CONSOLE_DIR);
    const files = existsSync(join(prebuilt, BUILT_FILES.script))
      ? { script: readFileSync(join(prebuilt, BUILT_FILES.script)), style: readFileSync(join(prebuilt, BUILT_FILES.style)) }
      : await bundleConsole();
    const script = hashedAsset('console', 'js', files.script);
    const style = hashedAsset('console', 'css', files.style);
    return { script, style, byName: new Map([script, style].map((asset) => [asset.name, asset])) };
  })();
  return built;
}

/** Bundles the console (into `outDir` as console.js and console.css when given: the API's build step). */
export async function bundleConsole(outDir?: string): Promise<{ script: Buffer; style: Buffer }> {
  const { build, stop } = await import('esbuild');
  const source = consoleSourceDir();
  const result = await build({
    entryPoints: { console: join(source, 'main.tsx'), 'console-style': join(source, 'console.css') },
    absWorkingDir: dirname(dirname(dirname(source))),
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2022', 'chrome111', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfigRaw: { compilerOptions: { jsx: 'react-jsx', jsxImportSource: 'preact', verbatimModuleSyntax: true } },
    legalComments: 'eof',
    write: false,
    outdir: 'console-bundle',
    logLevel: 'silent',
  }).finally(() =>
    // The bundle is made once: esbuild's service process (about 20 MB) need not stay for the API's life.
    stop(),
  );
  const output = (extension: string) => {
    const file = result.outputFiles.find((candidate) => candidate.path.endsWith(extension));
    if (!file) throw new Error(`the console's bundle has no ${extension} file`);
    return Buffer.from(file.contents);
  };
  const files = { script: output('.js'), style: output('.css') };
  if (outDir) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, BUILT_FILES.script), files.script);
    writeFileSync(join(outDir, BUILT_FILES.style), files.style);
  }
  return files;
}

/**
 * The console's policy: its own script and stylesheet only (no inline script or style, no eval),
 * calls to this origin only (the public API and its token endpoint), no form posts (signing in
 * is a navigation to the token service), never in a frame.
 */
export const CONSOLE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleSettings {
  title: string;
  issuer: string;
  publicBaseUrl: string;
}

function consolePage(assets: ConsoleAssets, settings: ConsoleSettings, requestPath: string): string {
  const to = (target: string) => escapeHtml(fromPage(requestPath, target));
  const issuer = settings.issuer.replace(/\/+$/, '');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(settings.title)}: console</title>
<link rel="icon" type="image/png" href="${to(`docs/assets/${docsAssets().icon.name}`)}">
<link rel="stylesheet" href="${to(`console/assets/${assets.style.name}`)}">
</head>
<body>
<div id="console" data-issuer="${escapeHtml(issuer)}" data-authorize="${escapeHtml(`${issuer}/oauth2/authorize`)}" data-client-id="${CONSOLE_CLIENT_ID}" data-redirect-uri="${escapeHtml(consoleRedirectUri(settings.publicBaseUrl))}">
<noscript>The console needs JavaScript. The API reference is at <a href="${to('docs')}">docs</a>.</noscript>
</div>
<script src="${to(`console/assets/${assets.script.name}`)}" defer></script>
</body>
</html>
`;
}

/** `GET /console` (the page) and `GET /console/assets/{file}` (its script and stylesheet, hashed names, cached for a year). */
export function consoleRoutes(assets: ConsoleAssets, settings: ConsoleSettings): Route<unknown>[] {
  return [
    defineRoute<unknown>({
      method: 'GET',
      path: '/console',
      operationId: 'getConsolePage',
      summary: 'The web console: a developer signs in through the token service and manages databases',
      description:
        `A page of its own script (Preact and uPlot, bundled by this process): it signs a developer in with the authorization ` +
        `code flow and PKCE as the first-party public client \`${CONSOLE_CLIENT_ID}\`, redirect URI {base_url}/console, and ` +
        'then calls this public API only. The sign-in answer (`code`, `state`, `iss`) comes back to this address.',
      tags: ['docs'],
      auth: 'none',
      success: htmlAnswer(200, 'The page'),
      errors: [],
      handler: async ({ path }) =>
        respond({
          body: consolePage(assets, settings, path),
          // The sign-in answer's code in the address must not leak to a link's target.
          headers: { ...PAGE_HEADERS, 'Referrer-Policy': 'no-referrer', 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': CONSOLE_POLICY },
        }),
    }),
    defineRoute<unknown, { file: string }>({
      method: 'GET',
      path: '/console/assets/{file}',
      operationId: 'getConsoleAsset',
      summary: 'The console’s script or stylesheet, under a hashed name',
      description: 'Cached for a year (`immutable`): a changed file has a new name, which the page names.',
      tags: ['docs'],
      auth: 'none',
      params: record({ file: text({ max: 200, description: 'The hashed file name, as the page names it' }) }),
      success: { status: 200, description: 'The script', contentType: 'text/javascript' },
      responses: [{ status: 200, description: 'The stylesheet', contentType: 'text/css' }],
      errors: [404],
      handler: async ({ params, header }) => {
        const asset = assets.byName.get(params.file);
        if (!asset) throw new NotFoundError('asset_not_found', `No console asset named '${params.file}' (the page names the current ones)`);
        return assetAnswer(asset, header('accept-encoding'));
      },
    }),
  ];
}
