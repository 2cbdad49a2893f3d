import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { expectApiError, expectDocsPageServed, expectIndexAnswers, pageReferences } from '@platform/test-fixtures';
import { query } from '@platform/testing';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

/**
 * The way in for a person: `GET /` (an index, HTML for a browser and JSON otherwise) and `GET /docs`
 * (Swagger UI over this API's /openapi.json, its files from this process under hashed names),
 * with the headers that keep them safe and cacheable. In a real browser: docs-browser.test.ts.
 */
describe('the docs page and the index of the API', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  it('serves /docs with a strict policy and only its own files, each cached for a year', async function () {
    await expectDocsPageServed(p.api.url, { connectSources: [TEST_AUDIENCE] });
  });

  it('answers an asset name it does not serve with 404 asset_not_found', async function () {
    expectApiError(await p.request('GET', '/docs/assets/swagger-ui-bundle.000000000000.js'), 404, 'asset_not_found');
    expectApiError(await p.request('GET', '/docs/assets/..%2F..%2Fpackage.json'), 404, 'asset_not_found');
  });

  it('answers / with JSON by default and HTML for a browser, linking the docs, the OpenAPI document and the token service', async function () {
    await expectIndexAnswers(p.api.url, {
      title: 'Multi-tenant PostgreSQL platform API',
      version: '0.1.0-abc1234',
      links: { docs: `${TEST_AUDIENCE}/docs`, openapi: `${TEST_AUDIENCE}/openapi.json`, console: `${TEST_AUDIENCE}/console`, tokenService: TEST_ISSUER },
    });
  });

  it('serves /console with a strict policy, its settings in data attributes and its two bundled files cached for a year', async function () {
    const page = await fetch(`${p.api.url}/console`);
    const html = await page.text();
    expect(page.status, html).to.equal(200);
    expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).to.equal('no-cache');
    expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
    expect(page.headers.get('content-security-policy')).to.equal(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(html).not.to.match(/<script>|<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\bon[a-z]+=/i);
    expect(html).to.include(`data-issuer="${TEST_ISSUER}" data-authorize="${TEST_ISSUER}/oauth2/authorize" data-client-id="platform-console" data-redirect-uri="${TEST_AUDIENCE}/console"`);
    const references = pageReferences(html);
    expect(references.map((reference) => reference.replace(/\.[0-9a-f]{12}\./, '.'))).to.deep.equal(['docs/assets/favicon.png', 'console/assets/console.css', 'docs', 'console/assets/console.js']);
    for (const asset of references.filter((reference) => reference.startsWith('console/assets/'))) {
      const plain = await fetch(`${p.api.url}/${asset}`, { headers: { 'accept-encoding': 'identity' } });
      const body = await plain.text();
      expect(plain.status, asset).to.equal(200);
      expect(plain.headers.get('content-type')).to.equal(asset.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(plain.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
      expect(asset).to.include(createHash('sha256').update(body).digest('hex').slice(0, 12));
      const compressed = await fetch(`${p.api.url}/${asset}`, { headers: { 'accept-encoding': 'br' } });
      expect(compressed.headers.get('content-encoding'), asset).to.equal('br');
      expect(await compressed.text()).to.equal(body);
    }
    expectApiError(await p.request('GET', '/console/assets/console.000000000000.js'), 404, 'asset_not_found');
  });

  it('registers the console’s first-party public client for this API’s /console, once', async function () {
    const rows = await query<{ workspace_id: string | null; type: string; redirect_uris: string[] }>(
      p.controlPlane.url,
      `select workspace_id, type, redirect_uris from oauth_clients where id = 'platform-console'`,
    );
    expect(rows).to.deep.equal([{ workspace_id: null, type: 'public', redirect_uris: [`${TEST_AUDIENCE}/console`] }]);
  });

  it('documents /, /docs and the assets in its OpenAPI document, and the session cookie as a security scheme', async function () {
    const { body: document } = await p.request('GET', '/openapi.json');
    expect(Object.keys(document.paths['/'].get.responses[200].content)).to.deep.equal(['application/json', 'text/html']);
    expect(Object.keys(document.paths['/docs'].get.responses[200].content)).to.deep.equal(['text/html']);
    expect(Object.keys(document.paths['/docs/assets/{file}'].get.responses[200].content)).to.deep.equal(['text/javascript', 'text/css', 'image/png']);
    expect(Object.keys(document.paths['/console'].get.responses[200].content)).to.deep.equal(['text/html']);
    expect(Object.keys(document.paths['/console/assets/{file}'].get.responses[200].content)).to.deep.equal(['text/javascript', 'text/css']);
    expect(document.paths['/docs'].get.security).to.deep.equal([]);
    expect(document.components.securitySchemes.sessionCookieAuth).to.include({ type: 'apiKey', in: 'cookie', name: 'auth.session-token' });
    expect(document.paths['/v2/databases/{database}/tenants/{tenantId}/users'].post.security).to.deep.equal([{ sessionCookieAuth: [] }, { familySessionCookie: [] }]);
    expect(document.paths['/workspaces'].get.security).to.deep.equal([{ jwtBearerAuth: [] }]);
  });
});
