import { expect } from 'chai';
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
