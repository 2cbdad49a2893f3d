import { expect } from 'chai';
import { docsAssets } from './docs-assets.js';
import { encodingFor } from './hashed-assets.js';
import { docsContentSecurityPolicy, prefersHtml } from './docs.routes.js';

describe('prefersHtml', () => {
  it('answers HTML only to an Accept that ranks text/html above JSON', () => {
    expect(prefersHtml('text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8')).to.equal(true);
    expect(prefersHtml('text/html')).to.equal(true);
    expect(prefersHtml('application/json;q=0.5, text/*')).to.equal(true);
    for (const accept of ['', '*/*', 'application/json', 'text/html;q=0.5, application/json', 'text/html, */*', 'text/html;q=0', 'text/html;q=abc', 'image/png']) {
      expect(prefersHtml(accept), accept).to.equal(false);
    }
  });
});

describe('docsContentSecurityPolicy', () => {
  it('lets the page call its own origin and the servers its document names, once each', () => {
    expect(docsContentSecurityPolicy(['http://api.test', 'http://api.test'])).to.include("connect-src 'self' http://api.test;");
    expect(docsContentSecurityPolicy([])).to.include("script-src 'self'; style-src 'self';");
  });
});

describe('encodingFor', () => {
  const script = docsAssets().swaggerScript;
  it('takes br before gzip, skips what the client refuses with q=0, and sends the icon as it is', () => {
    expect(encodingFor(script, 'gzip, deflate, br, zstd')).to.equal('br');
    expect(encodingFor(script, 'gzip')).to.equal('gzip');
    expect(encodingFor(script, 'br;q=0, gzip;q=0.5')).to.equal('gzip');
    expect(encodingFor(script, 'identity')).to.equal(undefined);
    expect(encodingFor(script, '')).to.equal(undefined);
    expect(encodingFor(docsAssets().icon, 'br')).to.equal(undefined);
  });

  it('names assets by a hash of what they hold', () => {
    expect(script.name).to.match(/^swagger-ui-bundle\.[0-9a-f]{12}\.js$/);
    expect(docsAssets().byName.get(script.name)).to.equal(script);
  });
});
