import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { hashedAsset as hashed, type HashedAsset } from './hashed-assets.js';

/** One file of the docs page or the index. */
export type DocsAsset = HashedAsset;

/**
 * Starts the reference on the page: the OpenAPI document's address comes from the element's
 * `data-openapi` (relative to the page, so a prefix-stripping proxy keeps working), never from
 * the query string (Swagger UI's `?url=` was a way to show a forged document under our name).
 * No validator (it would send the document to validator.swagger.io), no stored authorization
 * (a token in localStorage outlives the tab).
 */
const START_SCRIPT = `'use strict';
(function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: new URL(root.getAttribute('data-openapi'), document.baseURI).href,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: false,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
})();
`;

/** The index page's few rules, as a file of its own: the page's CSP allows no inline style. */
const SITE_STYLE = `body { font: 16px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 3rem auto; padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.6rem; margin-bottom: 0.25rem; }
.version { color: #59636e; margin-top: 0; }
ul { padding-left: 1.2rem; }
li { margin: 0.4rem 0; }
code { font-size: 0.9em; }
`;

function swaggerUiDir(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** A file of swagger-ui-dist, without its source-map comment (the map is not served: no request for it from a browser's tools). */
function swaggerUiFile(file: string): Buffer {
  const text = readFileSync(join(swaggerUiDir(), file), 'utf8');
  return Buffer.from(text.replace(/\n?\/[/*]# sourceMappingURL=[^\n]*\s*$/, '\n'));
}

export interface DocsAssets {
  swaggerScript: DocsAsset;
  swaggerStyle: DocsAsset;
  startScript: DocsAsset;
  siteStyle: DocsAsset;
  /** Both pages name it, so that a browser does not ask for /favicon.ico (a 404 in its console). */
  icon: DocsAsset;
  byName: Map<string, DocsAsset>;
}

let loaded: DocsAssets | undefined;

/** The page's files, read from node_modules once per process, at the first request that needs them. */
export function docsAssets(): DocsAssets {
  if (loaded) return loaded;
  const assets = {
    swaggerScript: hashed('swagger-ui-bundle', 'js', swaggerUiFile('swagger-ui-bundle.js')),
    swaggerStyle: hashed('swagger-ui', 'css', swaggerUiFile('swagger-ui.css')),
    startScript: hashed('docs', 'js', Buffer.from(START_SCRIPT)),
    siteStyle: hashed('site', 'css', Buffer.from(SITE_STYLE)),
    icon: hashed('favicon', 'png', readFileSync(join(swaggerUiDir(), 'favicon-32x32.png'))),
  };
  loaded = { ...assets, byName: new Map(Object.values(assets).map((asset) => [asset.name, asset])) };
  return loaded;
}
