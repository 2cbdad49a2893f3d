import { expect } from 'chai';

/** What `GET /` of an app must answer: its JSON (title, version, links) and words its HTML page must hold. */
export interface ExpectedIndex {
  title: string;
  version: string;
  links: Record<string, string>;
  htmlMentions?: string[];
}

/** Every `src` and `href` of a page, in order. */
export function pageReferences(html: string): string[] {
  return [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1]);
}

/**
 * `GET /docs` of the app at `baseUrl`: 200 HTML with a strict CSP (scripts and styles of its own
 * origin only, requests to it and `connectSources`), no inline script or style, only same-origin
 * relative references (to /openapi.json and hashed assets), each asset 200 with its media type and a
 * year's immutable caching, compressed when asked. Returns the page.
 */
export async function expectDocsPageServed(baseUrl: string, options: { connectSources: string[] }): Promise<string> {
  const page = await fetch(`${baseUrl}/docs`);
  const html = await page.text();
  expect(page.status, html).to.equal(200);
  expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
  expect(page.headers.get('cache-control')).to.equal('no-cache');
  expect(page.headers.get('x-frame-options')).to.equal('DENY');
  expect(page.headers.get('content-security-policy')).to.equal(
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
      `connect-src 'self' ${options.connectSources.join(' ')}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  );
  expect(html).not.to.match(/<script>|<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\bon[a-z]+=/i);
  const references = pageReferences(html);
  expect(references).to.have.length(5);
  for (const reference of references) expect(reference, 'a relative, same-origin reference').to.match(/^(docs\/assets\/[a-z-]+\.[0-9a-f]{12}\.(js|css|png)|openapi\.json)$/);
  expect(html).to.include('data-openapi="openapi.json"');
  const assets = references.filter((reference) => reference.startsWith('docs/assets/'));
  expect(assets.map((asset) => asset.replace(/\.[0-9a-f]{12}\./, '.'))).to.have.members(['docs/assets/favicon.png', 'docs/assets/swagger-ui.css', 'docs/assets/swagger-ui-bundle.js', 'docs/assets/docs.js']);
  for (const asset of assets) {
    const answer = await fetch(`${baseUrl}/${asset}`, { headers: { 'accept-encoding': 'gzip' } });
    const body = await answer.text();
    expect(answer.status, asset).to.equal(200);
    const contentTypes = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', png: 'image/png' };
    expect(answer.headers.get('content-type'), asset).to.equal(contentTypes[asset.split('.').pop() as keyof typeof contentTypes]);
    expect(answer.headers.get('cache-control'), asset).to.equal('public, max-age=31536000, immutable');
    expect(answer.headers.get('x-content-type-options'), asset).to.equal('nosniff');
    if (!asset.endsWith('.png')) expect(answer.headers.get('content-encoding'), asset).to.equal(body.length > 1024 ? 'gzip' : null);
    expect(answer.headers.get('vary'), asset).to.match(/\bAccept-Encoding\b/);
    if (asset.endsWith('.js') && body.length > 1024) {
      // Brotli when asked for, and the same text again; none when not asked for.
      const brotli = await fetch(`${baseUrl}/${asset}`, { headers: { 'accept-encoding': 'br, gzip;q=0.5' } });
      expect(brotli.headers.get('content-encoding'), asset).to.equal('br');
      expect(await brotli.text(), asset).to.equal(body);
      const plain = await fetch(`${baseUrl}/${asset}`, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.headers.get('content-encoding'), asset).to.equal(null);
      expect(await plain.text(), asset).to.equal(body);
    }
    // Nothing the browser would fetch from elsewhere: no source maps, no absolute URLs in the start script.
    expect(body, asset).not.to.match(/sourceMappingURL/);
    if (asset.includes('/docs.')) expect(body).not.to.match(/https?:/);
  }
  return html;
}

/** `GET /` of the app at `baseUrl`: JSON for a client (no Accept, `*\/*`, JSON), HTML for a browser, both with `Vary: Accept`. */
export async function expectIndexAnswers(baseUrl: string, expected: ExpectedIndex): Promise<void> {
  const jsonBody = { title: expected.title, version: expected.version, links: expected.links };
  for (const accept of [undefined, '*/*', 'application/json', 'text/html;q=0.5, application/json']) {
    const answer = await fetch(`${baseUrl}/`, { headers: accept === undefined ? {} : { accept } });
    expect(answer.status, accept).to.equal(200);
    expect(answer.headers.get('content-type'), accept).to.equal('application/json; charset=utf-8');
    expect(answer.headers.get('vary'), accept).to.match(/\bAccept\b/);
    expect(await answer.json(), accept).to.deep.equal(jsonBody);
  }
  // What Chromium and Firefox send for a page.
  const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
  const page = await fetch(`${baseUrl}/`, { headers: { accept: browserAccept } });
  const html = await page.text();
  expect(page.status).to.equal(200);
  expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
  expect(page.headers.get('vary')).to.match(/\bAccept\b/);
  expect(page.headers.get('content-security-policy')).to.equal("default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  expect(html).to.include(`<h1>${expected.title}</h1>`);
  for (const href of Object.values(expected.links)) expect(html).to.include(`<a href="${href}">`);
  for (const words of expected.htmlMentions ?? []) expect(html).to.include(words);
  const stylesheet = pageReferences(html).find((reference) => reference.startsWith('docs/assets/site.'));
  expect(stylesheet).to.match(/^docs\/assets\/site\.[0-9a-f]{12}\.css$/);
  const style = await fetch(`${baseUrl}/${stylesheet}`);
  expect(style.status).to.equal(200);
  expect(style.headers.get('content-type')).to.equal('text/css; charset=utf-8');
  const icon = await fetch(`${baseUrl}/${pageReferences(html).find((reference) => reference.startsWith('docs/assets/favicon.'))}`);
  expect(icon.status).to.equal(200);
  expect(icon.headers.get('content-type')).to.equal('image/png');
}
