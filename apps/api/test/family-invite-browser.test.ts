import { expect } from 'chai';
import { httpClient, linkIn, startTestMailServer } from '@platform/testing';
import { launchChromium } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';
import { pairOf } from './support/family-cookies.js';

const APP_ORIGIN = 'https://app.example.test';
// The invite link of a database without app origins opens the API's own page: a click on its Accept
// button, in a real browser, must be a same-origin POST the origin checks accept (under
// Referrer-Policy no-referrer, Chromium sent `Origin: null` and every accept was refused 403).
describe('the invite landing page in a real browser (Chromium)', function () {
  this.timeout(90_000);
  let p: TestPlatform;
  let api: RunningApi;
  let mail: Awaited<ReturnType<typeof startTestMailServer>>;

  before(async function () {
    p = await platform();
    mail = await startTestMailServer();
    api = await startApi(loadApiConfig({ ...p.env, ALLOWED_ORIGINS: APP_ORIGIN, SMTP_URL: mail.url, MAIL_FROM: 'platform@example.test' }));
  });

  after(async function () {
    await api?.close();
    await mail?.close();
  });

  it('accepts the invite when the invitee clicks Accept: a POST from the page’s own origin', async function () {
    const request = httpClient(api.url);
    const owner = await developerWithReadyDatabase(p);
    const base = `/v2/databases/${owner.database.id}`;
    expect((await request('PUT', `${owner.D}/auth-settings`, { token: owner.token, json: { selfSignUp: true } })).status).to.equal(200);
    const sdk = { 'nile-origin': APP_ORIGIN, 'nile-secure-cookies': 'false' };
    const csrf = await request('GET', `${base}/auth/csrf`, { headers: sdk });
    const csrfCookie = pairOf(csrf, 'nile.csrf-token');
    const up = await request('POST', `${base}/signup?newTenantName=Acme`, { headers: { ...sdk, cookie: csrfCookie }, json: { email: uniqueEmail('alice'), password: TEST_PASSWORD, csrfToken: csrf.body.csrfToken } });
    const [tenant] = up.body.tenants as string[];
    const carol = uniqueEmail('carol');
    const inv = await request('POST', `${base}/tenants/${tenant}/invite`, { headers: { ...sdk, cookie: `${csrfCookie}; ${pairOf(up, 'nile.session-token')}` }, json: { identifier: carol, csrfToken: csrf.body.csrfToken } });
    expect(inv.status, inv.text).to.equal(201);
    const link = linkIn(await mail.waitForMailTo(carol), `http://api.test${base}/tenants/${tenant}/invite?`);
    const port = new URL(api.url).port;
    const browser = await launchChromium([`--host-resolver-rules=MAP api.test:80 127.0.0.1:${port}`]);
    try {
      const page = await browser.newPage();
      const posted: Record<string, string>[] = [];
      page.on('request', (r) => { if (r.method() === 'POST') posted.push(r.headers()); });
      await page.goto(link.href);
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('#accept-invite button')]);
      expect(posted.map((headers) => headers.origin)).to.deep.equal(['http://api.test']);
      expect(answer?.status()).to.equal(200);
      expect(await page.content()).to.include('Invite accepted');
    } finally {
      await browser.close();
    }
  });
});
