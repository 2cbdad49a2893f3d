import { expect } from 'chai';
import { httpClient, linkIn, startTestMailServer } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';
import { pairOf } from './support/family-cookies.js';

const APP_ORIGIN = 'https://app.example.test';
/** What a browser sends with a form's POST. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
/** The API's public origin (PUBLIC_API_URL in the test platform): a form on its own page posts from it. */
const API_ORIGIN = 'http://api.test';

/** The hidden fields of the page's form, as a browser would post them. */
function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[name!] = value!.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&#39;', "'");
  }
  return fields;
}

/**
 * An invite link of a database without an app origin leads to this API's page. Opening it (a
 * GET, as a mail scanner would) changes nothing; only the page's form, posted with the CSRF
 * double submit, accepts, once.
 */
describe('the API family’s invite page: a GET shows, only the form accepts', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let api: RunningApi;
  let request: ReturnType<typeof httpClient>;
  let mail: Awaited<ReturnType<typeof startTestMailServer>>;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let base: string;
  const sdkHeaders = { 'nile-origin': APP_ORIGIN, 'nile-secure-cookies': 'false' };

  before(async function () {
    p = await platform();
    mail = await startTestMailServer();
    api = await startApi(loadApiConfig({ ...p.env, ALLOWED_ORIGINS: APP_ORIGIN, SMTP_URL: mail.url, MAIL_FROM: 'platform@example.test' }));
    request = httpClient(api.url);
    owner = await developerWithReadyDatabase(p);
    base = `/v2/databases/${owner.database.id}`;
    expect((await request('PUT', `${owner.D}/auth-settings`, { token: owner.token, json: { selfSignUp: true } })).status).to.equal(200);
  });

  after(async function () {
    await api?.close();
    await mail?.close();
  });

  /** Alice signs up with a tenant and invites `email`; answers the mailed link, the tenant and Alice's cookie. */
  async function invite(email: string, callbackUrl?: string) {
    const csrf = await request('GET', `${base}/auth/csrf`, { headers: sdkHeaders });
    const csrfCookie = pairOf(csrf, 'nile.csrf-token');
    const signedUp = await request('POST', `${base}/signup?newTenantName=Acme`, {
      headers: { ...sdkHeaders, cookie: csrfCookie },
      json: { email: uniqueEmail('alice'), password: TEST_PASSWORD, csrfToken: csrf.body.csrfToken },
    });
    expect(signedUp.status, signedUp.text).to.equal(201);
    const cookie = `${csrfCookie}; ${pairOf(signedUp, 'nile.session-token')}`;
    const [tenant] = signedUp.body.tenants as string[];
    const invited = await request('POST', `${base}/tenants/${tenant}/invite`, {
      headers: { ...sdkHeaders, cookie },
      json: { identifier: email, csrfToken: csrf.body.csrfToken, ...(callbackUrl ? { callbackUrl } : {}) },
    });
    expect(invited.status, invited.text).to.equal(201);
    const link = linkIn(await mail.waitForMailTo(email), `${API_ORIGIN}${base}/tenants/${tenant}/invite?`);
    return { link, tenant: tenant!, cookie };
  }

  const pending = async (tenant: string, cookie: string) => ((await request('GET', `${base}/tenants/${tenant}/invites`, { headers: { ...sdkHeaders, cookie } })).body as unknown[]).length;
  const members = async (tenant: string, cookie: string) =>
    ((await request('GET', `${base}/tenants/${tenant}/users`, { headers: { ...sdkHeaders, cookie } })).body as { email: string }[]).map((user) => user.email);
  const post = (fields: Record<string, string>, cookie: string, accept?: string) =>
    fetch(`${api.url}${base}/tenants/${fields.tenant}/invite/accept`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: API_ORIGIN, cookie, ...(accept ? { accept } : {}) },
      body: new URLSearchParams(Object.entries(fields).filter(([name]) => name !== 'tenant')).toString(),
    });

  it('shows the invite with a form and changes nothing; the form without CSRF is refused; with it, accepts once and signs in', async function () {
    const carol = uniqueEmail('carol');
    const { link, tenant, cookie } = await invite(carol);
    const page = await fetch(new URL(`${link.pathname}${link.search}`, api.url));
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(page.headers.get('referrer-policy')).to.equal('same-origin');
    expect(page.headers.get('content-security-policy')).to.equal(`default-src 'none'; form-action ${API_ORIGIN}; frame-ancestors 'none'; base-uri 'none'`);
    const html = await page.text();
    expect(html).to.include(`<h1>Join “Acme”</h1>`);
    expect(html).to.include(`<form id="accept-invite" method="post" action="${API_ORIGIN}${base}/tenants/${tenant}/invite/accept">`);
    const fields = formFields(html);
    expect(fields).to.include({ token: link.searchParams.get('token'), identifier: carol });
    const csrfCookie = pairOf(page, 'nile.csrf-token');
    expect(csrfCookie).to.match(/^nile\.csrf-token=.+/);
    // Opening it twice changed nothing: the invite is pending, Carol has no account.
    expect((await fetch(new URL(`${link.pathname}${link.search}`, api.url))).status).to.equal(200);
    expect(await pending(tenant, cookie)).to.equal(1);
    expect(await members(tenant, cookie)).not.to.include(carol);

    // Posted from another site's page, or without the page's CSRF cookie: 403, nothing changes.
    const noCookie = await post({ ...fields, tenant }, '');
    expect(noCookie.status).to.equal(403);
    expect(await noCookie.json()).to.include({ errorCode: 'csrf_failed' });
    const foreign = await fetch(`${api.url}${base}/tenants/${tenant}/invite/accept`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example.test', cookie: csrfCookie },
      body: new URLSearchParams(fields).toString(),
    });
    expect(foreign.status).to.equal(403);
    expect(await pending(tenant, cookie)).to.equal(1);

    const accepted = await post({ ...fields, tenant }, csrfCookie);
    expect(accepted.status).to.equal(200);
    expect(await accepted.text()).to.include(`<p>${carol} is now a member.</p>`);
    const session = pairOf(accepted, 'nile.session-token');
    const me = await request('GET', `${base}/me`, { headers: { cookie: session } });
    expect(me.body).to.include({ email: carol }).and.to.have.property('tenants').deep.equal([tenant]);
    expect(await pending(tenant, cookie)).to.equal(0);

    // Used: the form and the page both refuse it. A JSON client gets the APIError; the browser
    // posting the form again (a double click, the back button) gets a page that says why.
    const replay = await post({ ...fields, tenant }, csrfCookie);
    expect(replay.status).to.equal(400);
    expect(replay.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(await replay.json()).to.include({ errorCode: 'invalid_one_time_token' });
    const again = await post({ ...fields, tenant }, csrfCookie, BROWSER_ACCEPT);
    expect(again.status).to.equal(400);
    expect(again.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(again.headers.get('content-security-policy')).to.equal("default-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
    const againHtml = await again.text();
    expect(againHtml).to.include('<h1>This invite cannot be used</h1>');
    expect(againHtml).to.include('it was used already, has expired, or is not for this account');
    expect(againHtml).to.include('<code id="error-code">invalid_one_time_token</code>');
    expect(pairOf(again, 'nile.session-token')).to.equal('');
    const jsonFirst = await post({ ...fields, tenant }, csrfCookie, 'application/json, text/html;q=0.5');
    expect(jsonFirst.status).to.equal(400);
    expect(await jsonFirst.json()).to.include({ errorCode: 'invalid_one_time_token' });
    const used = await fetch(new URL(`${link.pathname}${link.search}`, api.url));
    expect(used.status).to.equal(400);
    expect(await used.text()).to.include('<code id="error-code">invalid_one_time_token</code>');
  });

  it('goes on to the callback with 303 when it is on an allowed origin; a made-up token is a 400 page', async function () {
    const dave = uniqueEmail('dave');
    const { link, tenant } = await invite(dave, `${APP_ORIGIN}/welcome`);
    expect(link.searchParams.get('callbackUrl')).to.equal(`${APP_ORIGIN}/welcome`);
    const page = await fetch(new URL(`${link.pathname}${link.search}`, api.url));
    const fields = formFields(await page.text());
    expect(fields.callbackUrl).to.equal(`${APP_ORIGIN}/welcome`);
    const accepted = await post({ ...fields, tenant }, pairOf(page, 'nile.csrf-token'));
    expect(accepted.status).to.equal(303);
    expect(accepted.headers.get('location')).to.equal(`${APP_ORIGIN}/welcome`);
    expect(pairOf(accepted, 'nile.session-token')).to.match(/^nile\.session-token=.+/);

    const madeUp = await fetch(`${api.url}${base}/tenants/${tenant}/invite?token=made-up&identifier=${encodeURIComponent(dave)}`);
    expect(madeUp.status).to.equal(400);
    expect(madeUp.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(await madeUp.text()).to.include('<code id="error-code">invalid_one_time_token</code>');
    // A malformed query is the API's usual 400.
    expectApiError(await request('GET', `${base}/tenants/${tenant}/invite?identifier=${encodeURIComponent(dave)}`), 400, 'validation_failed');
  });

  it('documents every answer of the form’s POST, the refusals in both media types', async function () {
    const { body: document } = await request('GET', '/openapi.json');
    const responses = document.paths['/v2/databases/{database}/tenants/{tenantId}/invite/accept'].post.responses;
    // 429: the hashing queue refuses a new account's password past its share (issue 46), an APIError as 403 is.
    expect(Object.keys(responses)).to.have.members(['200', '303', '400', '401', '403', '404', '413', '415', '429', '500', '503']);
    expect(Object.keys(responses['200'].content)).to.deep.equal(['text/html']);
    expect(Object.keys(responses['400'].content)).to.deep.equal(['text/html', 'application/json']);
    expect(Object.keys(responses['404'].content)).to.deep.equal(['text/html', 'application/json']);
    expect(Object.keys(responses['403'].content)).to.deep.equal(['application/json']);
    expect(Object.keys(responses['429'].content)).to.deep.equal(['application/json']);
  });
});
