import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, requireChromium } from '@platform/test-fixtures';
import { createTenant, developerWithReadyDatabase } from './support/fixtures.js';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';
import { registerProvider, startSsoPlatform, type SsoPlatform } from './support/sso.js';

/** The tenant's app: a page on loopback that receives the callback's form post. */
async function startApp() {
  const posts: URLSearchParams[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/sso') posts.push(new URLSearchParams(body));
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>App</title><h1 id="app">Welcome back</h1>\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sso`,
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Single sign-on as a person does it, in headless Chromium: the login URL, the provider's sign-in
 * page, the callback's self-submitting form (its CSP allows that script and that form target
 * only), ending on the tenant's app with the token posted to it. The platform's public URL is
 * http://api.test; the browser resolves that name to the API under test.
 */
describe('SSO sign-in in a real browser (Chromium)', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let sso: SsoPlatform | undefined;
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const consoleLines: string[] = [];

  before(async function () {
    requireChromium(this);
    p = await platform();
    sso = await startSsoPlatform(p);
    app = await startApp();
    const api = new URL(sso.api.url);
    browser = await launchChromium([`--host-resolver-rules=MAP ${new URL(TEST_AUDIENCE).hostname}:80 ${api.hostname}:${api.port}`]);
    page = await (await browser.newContext()).newPage();
    page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      mkdirSync('tmp', { recursive: true });
      const file = `tmp/sso-browser-failure-${Date.now()}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`    browser at ${page.url()}; screenshot ${file}; console:\n      ${consoleLines.join('\n      ') || '(nothing)'}`);
    }
  });

  after(async function () {
    this.timeout(90_000);
    await browser?.close();
    await app?.close();
    await sso?.close();
  });

  it('signs a new user in through the provider’s page and posts their token to the tenant’s app', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, owner.token, owner.D);
    const T = `${owner.D}/tenants/${tenant.id}`;
    await registerProvider(sso!, owner.token, T, { redirectURI: app!.url }, 'workforce');
    sso!.op.addAccount({ sub: 'dana', email: 'dana@corp.test', name: 'Dana' });

    const locations = await sso!.request('GET', `${owner.D}/tenants/auth/oidc/locations?email=dana%40corp.test`);
    expect(locations.body).to.have.length(1);
    await page.goto(locations.body[0].uri);
    expect(new URL(page.url()).origin).to.equal(sso!.op.origin);
    await page.fill('input[name=login]', 'dana');
    await Promise.all([page.waitForURL(app!.url), page.click('button[type=submit]')]);
    expect(await page.locator('#app').textContent()).to.equal('Welcome back');

    expect(app!.posts).to.have.length(1);
    const posted = Object.fromEntries(app!.posts[0]);
    expect(Object.keys(posted).sort()).to.deep.equal(['access_token', 'tenantId', 'userId']);
    expect(posted.tenantId).to.equal(tenant.id);
    const me = await sso!.request('GET', `${T}/users/${posted.userId}`, { token: posted.access_token });
    expect(me.status, me.text).to.equal(200);
    expect(me.body).to.include({ email: 'dana@corp.test', name: 'Dana' });
    expect(consoleLines.filter((line) => /Content Security Policy/i.test(line))).to.deep.equal([]);
  });
});
