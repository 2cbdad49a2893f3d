import { expect } from 'chai';
import { expectApiError, expectDocsPageServed, expectIndexAnswers } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';

/**
 * The token service's own way in: `GET /` (an index, HTML for a browser and JSON otherwise) and
 * `GET /docs` (Swagger UI over its /openapi.json, its files from this process under hashed names).
 */
describe('the docs page and the index of the token service', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  it('serves /docs with a strict policy and only its own files, each cached for a year', async function () {
    await expectDocsPageServed(p.issuer, { connectSources: [p.issuer] });
  });

  it('answers an asset name it does not serve with 404 asset_not_found', async function () {
    expectApiError(await p.oauth('GET', '/docs/assets/docs.000000000000.js'), 404, 'asset_not_found');
  });

  it('answers / with JSON by default and HTML for a browser, linking the docs, the OpenAPI document, its metadata and the API', async function () {
    await expectIndexAnswers(p.issuer, {
      title: 'Multi-tenant PostgreSQL platform token service',
      version: '0.1.0-dev',
      links: {
        docs: `${p.issuer}/docs`,
        openapi: `${p.issuer}/openapi.json`,
        metadata: `${p.issuer}/.well-known/oauth-authorization-server`,
        api: TEST_AUDIENCE,
      },
    });
  });

  it('documents /, /docs and the assets as answers in its OpenAPI document', async function () {
    const { body: document } = await p.oauth('GET', '/openapi.json');
    expect(Object.keys(document.paths['/'].get.responses[200].content)).to.deep.equal(['application/json', 'text/html']);
    expect(Object.keys(document.paths['/docs'].get.responses[200].content)).to.deep.equal(['text/html']);
    expect(Object.keys(document.paths['/docs/assets/{file}'].get.responses[200].content)).to.deep.equal(['text/javascript', 'text/css', 'image/png']);
    expect(document.paths['/docs'].get.security).to.deep.equal([]);
  });
});
