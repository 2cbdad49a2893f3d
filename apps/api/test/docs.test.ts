import { expect } from 'chai';
import { expectApiError, expectDocsPageServed, expectIndexAnswers } from '@platform/test-fixtures';
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
      links: { docs: `${TEST_AUDIENCE}/docs`, openapi: `${TEST_AUDIENCE}/openapi.json`, tokenService: TEST_ISSUER },
      htmlMentions: ['A web console (/console) is coming.'],
    });
  });

  it('documents /, /docs and the assets in its OpenAPI document, and the session cookie as a security scheme', async function () {
    const { body: document } = await p.request('GET', '/openapi.json');
    expect(Object.keys(document.paths['/'].get.responses[200].content)).to.deep.equal(['application/json', 'text/html']);
    expect(Object.keys(document.paths['/docs'].get.responses[200].content)).to.deep.equal(['text/html']);
    expect(Object.keys(document.paths['/docs/assets/{file}'].get.responses[200].content)).to.deep.equal(['text/javascript', 'text/css', 'image/png']);
    expect(document.paths['/docs'].get.security).to.deep.equal([]);
    expect(document.components.securitySchemes.sessionCookieAuth).to.include({ type: 'apiKey', in: 'cookie', name: 'auth.session-token' });
    expect(document.paths['/v2/databases/{database}/tenants/{tenantId}/users'].post.security).to.deep.equal([{ sessionCookieAuth: [] }, { familySessionCookie: [] }]);
    expect(document.paths['/workspaces'].get.security).to.deep.equal([{ jwtBearerAuth: [] }]);
  });
});
