import { expect } from 'chai';
import { Server } from '@niledatabase/server';
import { query, type httpClient } from '@platform/testing';
import { expectApiError, type TestOpenIdProvider } from '@platform/test-fixtures';
import type { RunningApi } from '../src/api.js';
import type { TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';
import { CookieJar } from './support/sdk-app.js';
import { read, setCookie, startFamilySsoWorld, type FamilySsoWorld } from './support/family-sso.js';

/**
 * Single sign-on through the family's surface, as an app built on their server SDK does it: the
 * SDK's route handlers (unmodified, in an app on loopback) forward the browser's requests, the
 * tenant's provider is a real OpenID Provider, and the sign-in ends in `nile.session-token`.
 */
describe('the API family’s SSO sign-in: POST /auth/signin/{provider}, the provider, GET /auth/callback/{provider}', function () {
  this.timeout(90_000);
  let w: FamilySsoWorld;
  let p: TestPlatform;
  let op: TestOpenIdProvider;
  let api: RunningApi;
  let APP: string;
  let request: ReturnType<typeof httpClient>;
  let tenantA: string;
  let tenantB: string;
  let base: string;
  let sdkHeaders: Record<string, string>;
  const account = (name?: string) => w.account(name);
  const startAtApp = (jar: CookieJar, provider: string) => w.startAtApp(jar, provider);
  const signInAtApp = (jar: CookieJar, tenantId: string, provider: string, sub: string) => w.signInAtApp(jar, tenantId, provider, sub);

  before(async function () {
    w = await startFamilySsoWorld();
    ({ p, op, api, APP, request, tenantA, tenantB, base, sdkHeaders } = w);
  });

  after(async function () {
    await w?.close();
  });

  it('signs in through the SDK’s routes and the provider, ending in nile.session-token that /auth/session and /me accept', async function () {
    const { sub, email } = account('Casey Corp');
    const jar = new CookieJar();
    const { started, back, finished } = await signInAtApp(jar, tenantA, 'corp', sub);

    // The answer to the form: the provider's authorization URL, with state, nonce and PKCE S256, and the app's callback.
    const authorization = new URL(started.body.url);
    expect(`${authorization.origin}${authorization.pathname}`).to.equal(`${op.issuer}/auth`);
    expect(Object.fromEntries(authorization.searchParams)).to.include({ redirect_uri: `${APP}/api/auth/callback/corp`, code_challenge_method: 'S256', response_type: 'code' });
    expect(authorization.searchParams.get('state')).to.match(/^[\w-]{40,}$/);
    expect(authorization.searchParams.get('nonce')).to.match(/^[\w-]{40,}$/);
    // The sign-in itself, sealed (SecretBox: v1.<key id>.<iv>.<ciphertext and tag>): nothing is kept server-side.
    expect(setCookie(started, 'nile.sso-state')).to.match(/^nile\.sso-state=v1\.[\w-]+\.[\w-]{16}\.[\w-]{200,}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600$/);
    expect(started.headers.get('cache-control')).to.equal('no-store');
    expect(`${back.origin}${back.pathname}`).to.equal(`${APP}/api/auth/callback/corp`);

    // The callback (forwarded by the SDK, which makes the API's Location a redirect): the session cookie, to the app's page.
    expect(finished.status, await finished.clone().text()).to.equal(302);
    expect(finished.headers.get('location')).to.equal(`${APP}/dashboard`);
    expect(setCookie(finished, 'nile.session-token')).to.match(/^nile\.session-token=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(setCookie(finished, 'nile.sso-state')).to.equal('nile.sso-state=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0');

    const session = await read(await fetch(`${APP}/api/auth/session`, { headers: { cookie: jar.header() } }));
    expect(session.status, session.text).to.equal(200);
    expect(session.body.user).to.include({ email, name: 'Casey Corp' });
    const me = await read(await fetch(`${APP}/api/me`, { headers: { cookie: jar.header() } }));
    expect(me.status, me.text).to.equal(200);
    expect(me.body).to.include({ id: session.body.user.id, email });
    expect(me.body.tenants).to.deep.equal([tenantA]);

    // The same session model: signing out ends it for good.
    const csrfToken = ((await (await fetch(`${APP}/api/auth/csrf`, { headers: { cookie: jar.header() } })).json()) as { csrfToken: string }).csrfToken;
    const cookieBefore = jar.header();
    const out = await fetch(`${APP}/api/auth/signout`, {
      method: 'POST',
      headers: { cookie: jar.header(), 'content-type': 'application/json' },
      body: JSON.stringify({ csrfToken, json: true }),
    });
    expect(out.status).to.equal(200);
    expect(await out.json()).to.deep.equal({ url: APP });
    expect((await request('GET', `${base}/auth/session`, { headers: { ...sdkHeaders, cookie: cookieBefore } })).body).to.deep.equal({});
    expectApiError(await request('GET', `${base}/me`, { headers: { ...sdkHeaders, cookie: cookieBefore } }), 401, 'invalid_session');

    // The provider's answer replayed, with the browser's old binding cookie: refused, nobody signed in.
    const replayJar = new CookieJar();
    replayJar.set('nile.sso-state', /^nile\.sso-state=([^;]+)/.exec(setCookie(started, 'nile.sso-state')!)![1]);
    const replayed = await read(await fetch(back, { redirect: 'manual', headers: { cookie: replayJar.header() } }));
    expectApiError(replayed, 400, 'session_state_mismatch');
    expect(setCookie(replayed, 'nile.session-token')).to.equal(undefined);
  });

  it('works from the SDK’s own signIn(provider, request), as an app’s server action calls it', async function () {
    const { sub, email } = account();
    const jar = new CookieJar();
    jar.set('nile.tenant-id', tenantA);
    const csrf = await fetch(`${APP}/api/auth/csrf`);
    jar.take(csrf);
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const nile = new Server({ apiUrl: `${api.url}${base}`, origin: APP, user: 'app', password: 'unused', databaseName: 'unused', db: { host: '127.0.0.1', port: 1, max: 1 } });
    const form = new Request(`${APP}/api/auth/signin/azure`, {
      method: 'POST',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken, callbackUrl: '/welcome' }).toString(),
    });
    const started = await read((await nile.auth.signIn('azure', form)) as unknown as Response);
    expect(started.status, started.text).to.equal(200);
    jar.take(started);
    const finished = await fetch(await op.signIn(started.body.url, sub), { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(finished.status).to.equal(302);
    expect(finished.headers.get('location')).to.equal(`${APP}/welcome`);
    jar.take(finished);
    const session = await read(await fetch(`${APP}/api/auth/session`, { headers: { cookie: jar.header() } }));
    expect(session.body.user.email).to.equal(email);
  });

  it('refuses a sign-in without the CSRF double submit, or from a foreign origin, with 403 and no effect', async function () {
    const pending = async () => Number((await query<{ n: string }>(p.controlPlane.url, 'select count(*) as n from sso_login_states'))[0].n);
    const before = await pending();
    const { csrfToken, cookie } = await (async () => {
      const answer = await request('GET', `${base}/auth/csrf`, { headers: sdkHeaders });
      return { csrfToken: answer.body.csrfToken as string, cookie: setCookie(answer, 'nile.csrf-token')!.split(';')[0] };
    })();
    const attempts: [string, Record<string, string>, unknown, string][] = [
      ['no CSRF cookie nor field', {}, {}, 'csrf_failed'],
      ['no field', { cookie }, {}, 'csrf_failed'],
      ['a wrong field', { cookie }, { csrfToken: 'f'.repeat(64) }, 'csrf_failed'],
      ['a foreign nile-origin', { cookie, 'nile-origin': 'http://evil.example' }, { csrfToken }, 'csrf_failed'],
      ['a foreign browser Origin', { cookie, origin: 'http://evil.example' }, { csrfToken }, 'cross_site_request'],
    ];
    for (const [what, headers, json, code] of attempts) {
      const answer = await request('POST', `${base}/auth/signin/corp`, { headers: { ...sdkHeaders, 'nile.tenant-id': tenantA, ...headers }, json });
      expectApiError(answer, 403, code);
      expect(answer.headers.getSetCookie(), what).to.deep.equal([]);
    }
    expect(await pending()).to.equal(before);
    // The same through the app: the SDK forwards the API's refusal.
    const refused = await read(await fetch(`${APP}/api/auth/signin/corp`, { method: 'POST', headers: { cookie: `nile.tenant-id=${tenantA}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'json=true' }));
    expectApiError(refused, 403, 'csrf_failed');
    expect(await pending()).to.equal(before);
  });

  it('finishes a sign-in only in the browser that started it, once', async function () {
    const { sub } = account();
    const victim = new CookieJar();
    victim.set('nile.tenant-id', tenantA);
    const started = await startAtApp(victim, 'corp');
    const back = await op.signIn(started.body.url, sub);
    const callback = (jar: CookieJar | null) => request('GET', `${base}/auth/callback/corp${back.search}`, { headers: { ...sdkHeaders, ...(jar ? { cookie: jar.header() } : {}) } });
    // Another browser, with a sign-in of its own under way: its cookie does not bind this state.
    const other = new CookieJar();
    other.set('nile.tenant-id', tenantA);
    await startAtApp(other, 'corp');
    const elsewhere = await callback(other);
    expectApiError(elsewhere, 400, 'session_state_mismatch');
    expect(elsewhere.body.message).to.equal('This sign-in was started elsewhere: start it again');
    expect(elsewhere.headers.getSetCookie()).to.deep.equal([]);
    // That refusal spent nothing: the browser that started it finishes it, once.
    const finished = await callback(victim);
    expect(finished.status, finished.text).to.equal(200);
    expect(setCookie(finished, 'nile.session-token')).to.match(/^nile\.session-token=[\w-]{43};/);
    expectApiError(await callback(victim), 400, 'session_state_mismatch');

    const second = new CookieJar();
    second.set('nile.tenant-id', tenantA);
    const again = await op.signIn((await startAtApp(second, 'corp')).body.url, sub);
    expectApiError(await request('GET', `${base}/auth/callback/corp${again.search}`, { headers: sdkHeaders }), 400, 'session_state_missing');
    // The provider's error instead of a code: nobody signed in.
    const third = new CookieJar();
    third.set('nile.tenant-id', tenantA);
    const state = new URL((await startAtApp(third, 'corp')).body.url).searchParams.get('state')!;
    const denied = await request('GET', `${base}/auth/callback/corp?error=access_denied&state=${state}`, { headers: { ...sdkHeaders, cookie: third.header() } });
    expectApiError(denied, 400, 'oidc_code_missing');
    expect(denied.headers.getSetCookie()).to.deep.equal([]);
  });

  it('keeps a tenant’s provider to its tenant: another tenant’s name finds nothing, and a login cannot finish as another provider', async function () {
    const { sub } = account();
    const jar = new CookieJar();
    jar.set('nile.tenant-id', tenantB);
    expectApiError(await startAtApp(jar, 'corp'), 404, 'unknown_oidc_provider');
    const noTenant = new CookieJar();
    expectApiError(await startAtApp(noTenant, 'corp'), 400, 'tenant_required');

    // A's login, sent back as B's provider: refused, no session.
    jar.set('nile.tenant-id', tenantA);
    const started = await startAtApp(jar, 'corp');
    const back = await op.signIn(started.body.url, sub);
    const asB = await request('GET', `${base}/auth/callback/bcorp${back.search}`, { headers: { ...sdkHeaders, cookie: jar.header() } });
    expectApiError(asB, 400, 'session_state_mismatch');
    expect(asB.body.message).to.equal('This sign-in was started with another provider: start it again');
    expect(asB.headers.getSetCookie()).to.deep.equal([]);
    // Back at A's provider but for another allowed app: refused.
    const otherApp = await request('GET', `${base}/auth/callback/corp${back.search}`, { headers: { ...sdkHeaders, 'nile-origin': w.OTHER_APP, cookie: jar.header() } });
    expectApiError(otherApp, 400, 'session_state_mismatch');
    expect(otherApp.body.message).to.equal('This sign-in was started from another app: start it again');
    expect(otherApp.headers.getSetCookie()).to.deep.equal([]);

    // Signed in with A's provider, the user is a member of A only: B's resources are absent.
    const member = new CookieJar();
    const { finished } = await signInAtApp(member, tenantA, 'corp', account().sub);
    expect(finished.status).to.equal(302);
    const asMember = { ...sdkHeaders, cookie: member.header() };
    expectApiError(await request('GET', `${base}/tenants/${tenantB}`, { headers: asMember }), 404, 'tenant_not_found');
    const me = await request('GET', `${base}/me`, { headers: asMember });
    expect(me.body.tenants).to.deep.equal([tenantA]);
    const tenants = await request('GET', `${base}/users/${me.body.id}/tenants`, { headers: asMember });
    expect(tenants.body.map((tenant: { id: string }) => tenant.id)).to.deep.equal([tenantA]);
  });

  it('refuses a session of database X on database Y, and a login of X finished at Y', async function () {
    const other = await developerWithReadyDatabase(p);
    const otherBase = `/v2/databases/${other.database.id}`;
    const jar = new CookieJar();
    const { finished } = await signInAtApp(jar, tenantA, 'corp', account().sub);
    expect(finished.status).to.equal(302);
    const cookie = jar.header();
    expect((await request('GET', `${otherBase}/auth/session`, { headers: { ...sdkHeaders, cookie } })).body).to.deep.equal({});
    expectApiError(await request('GET', `${otherBase}/me`, { headers: { ...sdkHeaders, cookie } }), 401, 'invalid_session');

    jar.set('nile.tenant-id', tenantA);
    const started = await startAtApp(jar, 'corp');
    const back = await op.signIn(started.body.url, account().sub);
    const atY = await request('GET', `${otherBase}/auth/callback/corp${back.search}`, { headers: { ...sdkHeaders, cookie: jar.header() } });
    expectApiError(atY, 400, 'session_state_mismatch');
    expect(atY.body.message).to.equal('This sign-in is unknown, expired or was started for another database: start it again');
    expect(atY.headers.getSetCookie()).to.deep.equal([]);
  });

  it('sets __Secure- cookies when the SDK asks for secure cookies', async function () {
    const { email, sub } = account();
    const secure = { ...sdkHeaders, 'nile-secure-cookies': 'true', 'nile.tenant-id': tenantA };
    const csrf = await request('GET', `${base}/auth/csrf`, { headers: secure });
    const csrfCookie = setCookie(csrf, '__Secure-nile.csrf-token')!.split(';')[0];
    const started = await request('POST', `${base}/auth/signin/corp`, { headers: { ...secure, cookie: csrfCookie }, json: { csrfToken: csrf.body.csrfToken } });
    expect(started.status, started.text).to.equal(200);
    const state = setCookie(started, '__Secure-nile.sso-state')!;
    expect(state).to.match(/; Max-Age=600; Secure$/);
    const back = await op.signIn(started.body.url, sub);
    // Without nile-origin, or naming another origin: 403, and the state is still there to finish.
    for (const origin of [{ 'nile-origin': '' }, { 'nile-origin': 'http://evil.example' }]) {
      const refused = await request('GET', `${base}/auth/callback/corp${back.search}`, { headers: { ...secure, ...origin, cookie: state.split(';')[0] } });
      expectApiError(refused, 403, 'csrf_failed');
      expect(refused.headers.getSetCookie()).to.deep.equal([]);
    }
    // A proxy that passes the browser's Referer on (the provider's page) is no refusal: the state proves the request.
    const finished = await request('GET', `${base}/auth/callback/corp${back.search}`, { headers: { ...secure, referer: `${op.origin}/interaction/x`, cookie: state.split(';')[0] } });
    expect(finished.status, finished.text).to.equal(200);
    expect(finished.body).to.deep.equal({ url: APP });
    expect(finished.headers.get('location')).to.equal(APP);
    const session = setCookie(finished, '__Secure-nile.session-token')!;
    expect(session).to.match(/^__Secure-nile\.session-token=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
    const me = await request('GET', `${base}/me`, { headers: { ...secure, cookie: session.split(';')[0] } });
    expect(me.body.email).to.equal(email);
  });

  it('the v2 create-user route takes nile.session-token with the SDK’s origin proof', async function () {
    const jar = new CookieJar();
    await signInAtApp(jar, tenantA, 'corp', account().sub);
    const cookie = `nile.session-token=${jar.get('nile.session-token')}`;
    const path = `${base}/tenants/${tenantA}/users`;
    const email = uniqueEmail('made-by-member');
    const withoutOrigin = await request('POST', path, { headers: { cookie }, json: { email, password: TEST_PASSWORD } });
    expectApiError(withoutOrigin, 403, 'csrf_failed');
    const created = await request('POST', path, { headers: { ...sdkHeaders, cookie }, json: { email, password: TEST_PASSWORD } });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.email).to.equal(email);
    expectApiError(await request('POST', path, { headers: { ...sdkHeaders, cookie: 'nile.session-token=made-up' }, json: { email: uniqueEmail('x'), password: TEST_PASSWORD } }), 401);
    // The SDK's own POST /api/tenants/{id}/users handler reaches the route signed in, but posts only the session's email.
    const viaSdk = await read(await fetch(`${APP}/api/tenants/${tenantA}/users`, { method: 'POST', headers: { cookie: jar.header(), 'content-type': 'application/json' }, body: '{}' }));
    expectApiError(viaSdk, 400, 'validation_failed');
    expect(viaSdk.body.message).to.include('password');
  });

  it('documents every answer of the two routes in /openapi.json', async function () {
    const { body: doc } = await request('GET', '/openapi.json');
    const signin = doc.paths['/v2/databases/{database}/auth/signin/{provider}'].post;
    const callback = doc.paths['/v2/databases/{database}/auth/callback/{provider}'].get;
    expect(signin.responses).to.include.keys('200', '400', '403', '404', '503');
    expect(signin.responses).not.to.have.any.keys('429');
    expect(callback.responses).to.include.keys('200', '400', '401', '403', '404', '409', '502', '503');
    expect(signin.security).to.deep.equal([{ familySessionCookie: [] }]);
    expect(Object.keys(signin.requestBody.content)).to.deep.equal(['application/json', 'application/x-www-form-urlencoded']);
    const createUser = doc.paths['/v2/databases/{database}/tenants/{tenantId}/users'].post;
    expect(createUser.security).to.deep.equal([{ sessionCookieAuth: [] }, { familySessionCookie: [] }]);
    expect(createUser.responses).to.include.keys('201', '400', '401', '403', '404', '409');
  });
});
