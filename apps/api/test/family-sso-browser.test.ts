import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Server } from '@niledatabase/server';
import type { Browser, Page } from 'playwright-core';
import { freePort, httpClient } from '@platform/testing';
import { launchChromium, requireChromium, startTestOpenIdProvider, type TestOpenIdProvider } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { createTenant, developerWithReadyDatabase } from './support/fixtures.js';
import { startSdkApp, type SdkApp } from './support/sdk-app.js';

/** The app's sign-in page: the tenant in its cookie, then the SDK's CSRF and sign-in routes, as the family's React helpers do. */
const SIGN_IN_PAGE = `<!doctype html><title>Sign in</title>
<button id="sso">Sign in with Corp</button>
<script>
document.cookie = 'nile.tenant-id=' + new URLSearchParams(location.search).get('tenant') + '; path=/';
document.getElementById('sso').addEventListener('click', async () => {
  const { csrfToken } = await (await fetch('/api/auth/csrf')).json();
  const form = new URLSearchParams({ csrfToken, callbackUrl: location.origin + '/dashboard', json: 'true' });
  const answer = await fetch('/api/auth/signin/corp', { method: 'POST', body: form });
  location.href = (await answer.json()).url;
});
</script>`;

/** Where a signed-in user lands: who the SDK's session route says they are. */
const DASHBOARD_PAGE = `<!doctype html><title>Dashboard</title><h1 id="who">…</h1>
<script>
fetch('/api/auth/session').then((answer) => answer.json()).then((session) => {
  document.getElementById('who').textContent = session.user ? session.user.email : 'signed out';
});
</script>`;

/**
 * SSO through the family's surface as a person does it, in headless Chromium: the app's page
 * (the published SDK's handlers behind it), the tenant's provider's sign-in page, back through the
 * app's callback route, landing signed in with the browser holding `nile.session-token`.
 */
describe('the API family’s SSO sign-in in a real browser (Chromium)', function () {
  this.timeout(90_000);
  let p: TestPlatform;
  let op: TestOpenIdProvider | undefined;
  let api: RunningApi | undefined;
  let app: SdkApp | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let tenantId: string;
  const consoleLines: string[] = [];

  before(async function () {
    requireChromium(this);
    const appPort = await freePort();
    const APP = `http://127.0.0.1:${appPort}`;
    p = await platform();
    op = await startTestOpenIdProvider();
    api = await startApi(loadApiConfig({ ...p.env, API_PORT: String(await freePort()), SSO_ALLOW_LOOPBACK_HTTP: 'true', ALLOWED_ORIGINS: APP }));
    const owner = await developerWithReadyDatabase(p);
    tenantId = (await createTenant(p, owner.token, owner.D)).id;
    const clientId = `client-${randomBytes(4).toString('hex')}`;
    const clientSecret = randomBytes(24).toString('base64url');
    op.addClient({ clientId, clientSecret, redirectUris: [`${APP}/api/auth/callback/corp`] });
    const registered = await httpClient(api.url)('POST', `${owner.D}/tenants/${tenantId}/auth/oidc/providers/corp`, {
      token: owner.token,
      json: { configUrl: op.configUrl, clientId, clientSecret, emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expect(registered.status, registered.text).to.equal(200);
    // This app only forwards auth calls: its SQL settings are never used.
    const nile = new Server({
      apiUrl: `${api.url}/v2/databases/${owner.database.id}`,
      origin: APP,
      user: 'app',
      password: 'unused',
      databaseName: 'unused',
      db: { host: '127.0.0.1', port: 1, max: 1 },
    });
    app = await startSdkApp(nile, appPort, { '/login': SIGN_IN_PAGE, '/dashboard': DASHBOARD_PAGE });
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      mkdirSync('tmp', { recursive: true });
      const file = `tmp/family-sso-browser-failure-${Date.now()}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`    browser at ${page.url()}; screenshot ${file}; console:\n      ${consoleLines.join('\n      ') || '(nothing)'}`);
    }
  });

  after(async function () {
    this.timeout(90_000);
    await browser?.close();
    await app?.close();
    await api?.close();
    await op?.close();
  });

  it('signs a new user in through the provider’s page and lands on the app signed in', async function () {
    op!.addAccount({ sub: 'erin', email: 'erin@corp.test', name: 'Erin' });
    await page.goto(`${app!.origin}/login?tenant=${tenantId}`);
    await Promise.all([page.waitForURL((url) => url.origin === op!.origin), page.click('#sso')]);
    await page.fill('input[name=login]', 'erin');
    await Promise.all([page.waitForURL(`${app!.origin}/dashboard`), page.click('button[type=submit]')]);
    await page.waitForFunction(`document.getElementById('who').textContent !== '…'`);
    expect(await page.locator('#who').textContent()).to.equal('erin@corp.test');

    const cookies = await page.context().cookies(app!.origin);
    const session = cookies.find((cookie) => cookie.name === 'nile.session-token');
    expect(session).to.include({ httpOnly: true, sameSite: 'Lax', path: '/', secure: false });
    expect(session!.value).to.match(/^[\w-]{43}$/);
    // The sign-in's binding cookie is spent with it.
    expect(cookies.map((cookie) => cookie.name)).not.to.include('nile.sso-state');
  });
});
