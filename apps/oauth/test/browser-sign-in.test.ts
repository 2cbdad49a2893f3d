import { mkdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, requireChromium, signUpDeveloper } from '@platform/test-fixtures';
import { platform, type TestPlatform } from './support/platform.js';

const CLIENT_ID = 'platform-cli';
const CLIENT_NAME = 'Platform command line';
const SCOPE = 'api:read api:write';

/** What the CLI's loopback redirect target saw. */
interface Callback {
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

/** A loopback HTTP server standing in for the CLI's redirect target (RFC 8252 section 7.3). */
async function startCallbackServer() {
  const received: Callback[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method !== 'GET' || url.pathname !== '/callback') {
      response.writeHead(404).end();
      return;
    }
    received.push({ query: url.searchParams, headers: request.headers });
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>Signed in</title><h1>Signed in</h1><p>You can close this tab and go back to the terminal.</p>\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  return {
    redirectUri,
    /** The callbacks that carried this state. */
    withState: (state: string) => received.filter((callback) => callback.query.get('state') === state),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The token service's sign-in page in a real browser (headless Chromium): the authorization code
 * flow with PKCE for the first-party CLI client and a loopback redirect URI, as `npm run login`
 * does it, including the sign-up detour, a wrong password, the CSRF cookie and the page's headers.
 */
describe('the sign-in page in a real browser (Chromium)', function () {
  this.timeout(60_000);
  let service: TestPlatform | undefined;
  let callbacks: Awaited<ReturnType<typeof startCallbackServer>> | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let page: Page;
  /** What the browser printed, shown when a step fails: a CSP refusal appears only here. */
  let consoleLines: string[] = [];

  before(async function () {
    requireChromium(this);
    service = await platform();
    callbacks = await startCallbackServer();
    browser = await launchChromium();
  });

  beforeEach(async function () {
    // A fresh context is a fresh profile: no cookies from the previous test.
    context = await browser!.newContext();
    page = await context.newPage();
    consoleLines = [];
    page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      mkdirSync('tmp', { recursive: true });
      const file = `tmp/browser-sign-in-failure-${Date.now()}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`    browser at ${page.url()}; screenshot ${file}; console:\n      ${consoleLines.join('\n      ') || '(nothing)'}`);
    }
    await context?.close();
    context = undefined;
  });

  after(async function () {
    await browser?.close();
    await callbacks?.close();
  });

  /** A fresh authorization request: PKCE S256, a random state, the loopback redirect URI. */
  async function authorizationRequest() {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = new URL('/oauth2/authorize', service!.issuer);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: callbacks!.redirectUri,
      scope: SCOPE,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    return { url: url.toString(), state, verifier };
  }

  /** Fills the sign-in form, submits it and answers the token service's response to the POST. */
  async function submitSignIn(credentials: { email: string; password: string }) {
    await page.getByLabel('Email').fill(credentials.email);
    await page.getByLabel('Password').fill(credentials.password);
    const [response] = await Promise.all([
      page.waitForResponse((response) => new URL(response.url()).pathname === '/oauth2/authorize' && response.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in and allow' }).click(),
    ]);
    return response;
  }

  /**
   * Signs in on the current sign-in page and waits for the browser to arrive at the loopback
   * callback. A redirect refused by the page's Content-Security-Policy (form-action) never
   * arrives: the failure then quotes the browser's console, where Chromium names the directive.
   */
  async function signInToCallback(credentials: { email: string; password: string }, state: string) {
    const callbackUrl = new URL(callbacks!.redirectUri);
    const arrived = page
      .waitForRequest((request) => request.isNavigationRequest() && request.url().startsWith(`${callbackUrl.origin}${callbackUrl.pathname}?`), { timeout: 15_000 })
      .then(
        (request) => ({ request }),
        (error: Error) => ({ error }),
      );
    await page.getByLabel('Email').fill(credentials.email);
    await page.getByLabel('Password').fill(credentials.password);
    await page.getByRole('button', { name: 'Sign in and allow' }).click();
    const outcome = await arrived;
    if ('error' in outcome) {
      throw new Error(`the browser did not go to ${callbacks!.redirectUri} (at ${page.url()}; console: ${consoleLines.join(' | ') || 'nothing'}): ${outcome.error.message}`);
    }
    // The navigation is the token service's 303 answer to the form, followed by the browser.
    const post = outcome.request.redirectedFrom();
    expect(post?.method(), 'the callback was reached by a redirect from the form post').to.equal('POST');
    expect(new URL(post!.url()).pathname).to.equal('/oauth2/authorize');
    expect((await post!.response())?.status()).to.equal(303);
    await page.waitForLoadState();
    expect(await page.getByRole('heading', { level: 1 }).textContent(), 'the callback page').to.equal('Signed in');
    const seen = callbacks!.withState(state);
    expect(seen, 'one callback with this state').to.have.length(1);
    return seen[0];
  }

  /** The client's side of the exchange: POST /oauth2/token with the code and the verifier. */
  async function redeem(code: string, verifier: string) {
    return service!.oauth('POST', '/oauth2/token', {
      raw: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: CLIENT_ID,
        code,
        redirect_uri: callbacks!.redirectUri,
        code_verifier: verifier,
      }).toString(),
      contentType: 'application/x-www-form-urlencoded',
    });
  }

  it('renders the sign-in page with the client name, refuses framing, and sets a SameSite=Strict CSRF cookie', async function () {
    const request = await authorizationRequest();
    const response = await page.goto(request.url);
    expect(response?.status()).to.equal(200);
    expect(await page.title()).to.equal('Sign in');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sign in');
    expect(await page.locator('p.lead strong').textContent()).to.equal(CLIENT_NAME);
    expect(await page.locator('input[name="state"]').inputValue()).to.equal(request.state);

    // allHeaders(): Playwright's headers() leaves out security-related headers such as Set-Cookie.
    const headers = await response!.allHeaders();
    const policy = (headers['content-security-policy'] ?? '').split(';').map((directive) => directive.trim());
    expect(policy).to.include("frame-ancestors 'none'");
    // The form may post to the page itself, and the 303 that follows may go to the client's origin.
    expect(policy).to.include(`form-action 'self' ${new URL(callbacks!.redirectUri).origin}`);
    expect(headers['x-frame-options']).to.equal('DENY');
    expect(headers['referrer-policy']).to.equal('no-referrer');
    expect(headers['cache-control']).to.equal('no-store');

    const cookies = await context!.cookies(service!.issuer);
    const csrf = cookies.find((cookie) => cookie.name === 'oauth_csrf');
    expect(csrf, 'the CSRF cookie').to.include({ sameSite: 'Strict', httpOnly: true, path: '/' });
    expect(await page.locator('input[name="csrf"]').inputValue()).to.equal(csrf!.value);
  });

  it('signs up through "Create one", returns to the sign-in page with a notice, and completes the flow', async function () {
    const request = await authorizationRequest();
    await page.goto(request.url);
    await Promise.all([page.waitForURL((url) => url.pathname === '/signup'), page.getByRole('link', { name: 'Create one' }).click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Create a developer account');

    const email = `browser-${oidc.randomState().slice(0, 10).toLowerCase()}@example.test`;
    const password = `pw-${oidc.randomState()}`;
    await page.getByLabel('Name').fill('Browser developer');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel(/^Password/).fill(password);
    const [created] = await Promise.all([
      page.waitForResponse((response) => new URL(response.url()).pathname === '/signup' && response.request().method() === 'POST'),
      page.getByRole('button', { name: 'Create account' }).click(),
    ]);
    expect(created.status(), 'sign-up answers with a redirect back to the sign-in page').to.equal(303);
    await page.waitForURL((url) => url.pathname === '/oauth2/authorize' && url.searchParams.get('signed_up') === '1');
    expect(await page.getByRole('status').textContent()).to.equal('Your account is ready: sign in to continue.');
    // The authorization request survived the detour through sign-up.
    expect(await page.locator('p.lead strong').textContent()).to.equal(CLIENT_NAME);
    expect(await page.locator('input[name="state"]').inputValue()).to.equal(request.state);
    expect(await page.locator('input[name="redirect_uri"]').inputValue()).to.equal(callbacks!.redirectUri);

    const callback = await signInToCallback({ email, password }, request.state);
    const redeemed = await redeem(callback.query.get('code') ?? '', request.verifier);
    expect(redeemed.status, redeemed.text).to.equal(200);
  });

  it('shows an error for a wrong password, then signs in; the code redeems for tokens the API accepts', async function () {
    const credentials = await signUpDeveloper(service!.issuer);
    const request = await authorizationRequest();
    await page.goto(request.url);

    const refused = await submitSignIn({ email: credentials.email, password: `${credentials.password}-wrong` });
    expect(refused.status()).to.equal(401);
    await page.waitForLoadState();
    expect(new URL(page.url()).pathname).to.equal('/oauth2/authorize');
    expect(await page.getByRole('alert').textContent()).to.equal('Email or password is incorrect.');
    expect(await page.title()).to.equal('Sign in');
    // The email stays, the password does not, and the request is still the same one.
    expect(await page.getByLabel('Email').inputValue()).to.equal(credentials.email);
    expect(await page.getByLabel('Password').inputValue()).to.equal('');
    expect(await page.locator('input[name="state"]').inputValue()).to.equal(request.state);
    expect(callbacks!.withState(request.state)).to.have.length(0);

    const callback = await signInToCallback(credentials, request.state);
    expect(callback.query.get('code')).to.be.a('string').and.not.equal('');
    expect(callback.query.get('state')).to.equal(request.state);
    expect(callback.query.get('iss')).to.equal(service!.issuer);
    expect(callback.query.has('error')).to.equal(false);
    // Referrer-Policy: no-referrer held on the way out: the client learns nothing of the sign-in page.
    expect(callback.headers.referer).to.equal(undefined);

    const tokens = await redeem(callback.query.get('code')!, request.verifier);
    expect(tokens.status, tokens.text).to.equal(200);
    expect(tokens.body.access_token).to.be.a('string');
    expect(tokens.body.refresh_token).to.be.a('string');
    expect(tokens.body.scope).to.equal(SCOPE);
    const listed = await service!.request('GET', '/workspaces', { token: tokens.body.access_token });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body).to.deep.equal([]);

    // The code was single use: the same exchange again is refused.
    const replayed = await redeem(callback.query.get('code')!, request.verifier);
    expect(replayed.status).to.equal(400);
    expect(replayed.body.error).to.equal('invalid_grant');
  });
});
