import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createTenant, createUser, developerWithReadyDatabase, expectApiError, loginUser, TEST_PASSWORD } from './support/fixtures.js';
import { query } from '@platform/testing';
import { platform, type TestPlatform } from './support/platform.js';
import {
  callbackUrlOf,
  onApi,
  pageErrorCode,
  registerProvider,
  signInWithProvider,
  startLogin,
  startSsoPlatform,
  visitCallback,
  type SsoPlatform,
} from './support/sso.js';

describe('SSO sign-in through a real OpenID Provider', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let sso: SsoPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let tenantId: string;
  let T: string;
  let provider: string;

  const newSub = () => `sub-${randomBytes(4).toString('hex')}`;
  /** A new account at the provider; its email is at corp.test unless told otherwise. */
  const account = (fields: { email?: string; emailVerified?: boolean; name?: string } = {}) => {
    const sub = newSub();
    const email = fields.email ?? `${sub}@corp.test`;
    sso.op.addAccount({ sub, email, ...fields });
    return { sub, email };
  };
  const members = async (path = T) => {
    const answer = await sso.request('GET', `${path}/users`, { token: owner.token });
    expect(answer.status, answer.text).to.equal(200);
    return answer.body as { id: string; email: string; name: string | null; emailVerified: string | null }[];
  };
  const expectFailurePage = (callback: { status: number; html: string; headers: Headers }, status: number, code: string) => {
    expect(callback.status, callback.html).to.equal(status);
    expect(pageErrorCode(callback.html), callback.html).to.equal(code);
    expect(callback.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(callback.headers.get('content-security-policy')).to.include("default-src 'none'");
    expect(callback.headers.getSetCookie().some((cookie) => cookie.startsWith('auth.session-token='))).to.equal(false);
  };

  before(async function () {
    p = await platform();
    sso = await startSsoPlatform(p);
    owner = await developerWithReadyDatabase(p);
    tenantId = (await createTenant(p, owner.token, owner.D)).id;
    T = `${owner.D}/tenants/${tenantId}`;
    provider = (await registerProvider(sso, owner.token, T, {}, 'corp-idp')).provider;
  });

  after(async function () {
    this.timeout(90_000);
    await sso?.close();
  });

  afterEach(function () {
    sso.op.idTokenOverride = null;
  });

  it('redirects to the provider with state, nonce and PKCE S256, bound to the browser by a cookie', async function () {
    const start = await startLogin(sso, T, provider);
    expect(start.location.origin + start.location.pathname).to.equal(`${sso.op.issuer}/auth`);
    const params = Object.fromEntries(start.location.searchParams);
    expect(params).to.include({ response_type: 'code', redirect_uri: callbackUrlOf(T), code_challenge_method: 'S256', scope: 'openid email profile' });
    expect(params.state).to.match(/^[\w-]{40,}$/);
    expect(params.nonce).to.match(/^[\w-]{40,}$/);
    expect(params.code_challenge).to.match(/^[\w-]{43}$/);
    expect(start.setCookie).to.match(new RegExp(`^auth\\.sso-login=[\\w-]{43}; Path=${T}/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=600$`));
  });

  it('creates the user on the first sign-in, joins them to the tenant, and posts a working token to the redirectURI', async function () {
    const { sub, email } = account({ name: 'Alice Example' });
    const callback = await signInWithProvider(sso, T, provider, sub);
    expect(callback.status, callback.html).to.equal(200);
    expect(callback.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(callback.headers.get('content-security-policy')).to.match(/^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]+=*'; form-action https:\/\/app\.test\/sso; frame-ancestors 'none'; base-uri 'none'$/);
    expect(callback.headers.get('cache-control')).to.equal('no-store');
    expect(callback.html).to.include('<form id="sso-result" method="post" action="https://app.test/sso">');
    expect(Object.keys(callback.fields).sort()).to.deep.equal(['access_token', 'tenantId', 'userId']);
    expect(callback.fields.tenantId).to.equal(tenantId);
    const session = callback.headers.getSetCookie().find((cookie) => cookie.startsWith('auth.session-token='));
    expect(session).to.match(/^auth\.session-token=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);

    const user = (await members()).find((member) => member.id === callback.fields.userId);
    expect(user).to.include({ email, name: 'Alice Example' });
    expect(user?.emailVerified).to.be.a('string');
    const asUser = await sso.request('GET', `${T}/users/${callback.fields.userId}`, { token: callback.fields.access_token });
    expect(asUser.status, asUser.text).to.equal(200);
    expect(asUser.body.email).to.equal(email);
    const me = await sso.request('GET', `${owner.D}/users/me`, { token: callback.fields.access_token });
    expect(me.status, me.text).to.equal(200);
    expect(me.body.tenants).to.deep.equal([tenantId]);

    const again = await signInWithProvider(sso, T, provider, sub);
    expect(again.status).to.equal(200);
    expect(again.fields.userId).to.equal(callback.fields.userId);
    expect((await members()).filter((member) => member.email === email)).to.have.length(1);
  });

  it('answers a 400 page and creates nothing for a missing, replayed, foreign or other-browser state', async function () {
    const { sub } = account();
    const before = (await members()).length;
    expectFailurePage(await visitCallback(`${sso.api.url}${T}/auth/oidc/callback?code=abc`, undefined), 400, 'session_state_missing');
    expectFailurePage(await visitCallback(`${sso.api.url}${T}/auth/oidc/callback?code=abc&state=made-up`, 'auth.sso-login=made-up'), 400, 'session_state_mismatch');

    const done = await signInWithProvider(sso, T, provider, sub);
    expect(done.status).to.equal(200);
    expectFailurePage(await visitCallback(done.url, done.loginCookie), 400, 'session_state_mismatch');

    // The provider's answer reaches a browser that did not start the sign-in: no cookie, or another one's.
    const first = await startLogin(sso, T, provider);
    const firstBack = onApi(sso.api, await sso.op.signIn(first.location.href, sub));
    expectFailurePage(await visitCallback(firstBack, undefined), 400, 'session_state_missing');
    expectFailurePage(await visitCallback(firstBack, first.loginCookie), 400, 'session_state_mismatch');
    const mine = await startLogin(sso, T, provider);
    const theirs = await startLogin(sso, T, provider);
    const mineBack = onApi(sso.api, await sso.op.signIn(mine.location.href, sub));
    expectFailurePage(await visitCallback(mineBack, theirs.loginCookie), 400, 'session_state_mismatch');

    // A state started for this tenant, brought back to another tenant's callback.
    const other = await createTenant(p, owner.token, owner.D);
    const moved = await startLogin(sso, T, provider);
    const movedBack = new URL(await sso.op.signIn(moved.location.href, sub));
    const elsewhere = `${sso.api.url}${owner.D}/tenants/${other.id}/auth/oidc/callback${movedBack.search}`;
    expectFailurePage(await visitCallback(elsewhere, moved.loginCookie), 400, 'session_state_mismatch');
    expect((await members()).length).to.equal(before + 1);
  });

  it('answers 400 oidc_code_missing when the provider sends an error instead of a code, escaping what it said', async function () {
    const start = await startLogin(sso, T, provider);
    const state = start.location.searchParams.get('state')!;
    const markup = '<img src=x onerror=alert(1)>';
    const url = `${sso.api.url}${T}/auth/oidc/callback?error=${encodeURIComponent(markup)}&state=${state}`;
    const page = await visitCallback(url, start.loginCookie);
    expectFailurePage(page, 400, 'oidc_code_missing');
    expect(page.html).not.to.include('<img');
    expect(page.html).to.include('&#60;img src=x onerror=alert(1)&#62;');
  });

  it('refuses an ID token whose nonce, audience or expiry does not hold (401), creating nobody', async function () {
    const tampered: [string, (claims: Record<string, unknown>) => Record<string, unknown>][] = [
      ['nonce', (claims) => ({ ...claims, nonce: 'another-sign-in' })],
      ['aud', (claims) => ({ ...claims, aud: 'another-client' })],
      ['exp', (claims) => ({ ...claims, iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 })],
      ['iss', (claims) => ({ ...claims, iss: 'https://evil.test' })],
    ];
    for (const [what, change] of tampered) {
      const { sub, email } = account();
      sso.op.idTokenOverride = change;
      const callback = await signInWithProvider(sso, T, provider, sub);
      expectFailurePage(callback, 401, 'oidc_authentication_failed');
      expect((await members()).some((member) => member.email === email), what).to.equal(false);
    }
  });

  it('refuses a callback whose iss is not the provider’s (RFC 9207), creating nobody', async function () {
    const { sub, email } = account();
    const start = await startLogin(sso, T, provider);
    const back = new URL(await sso.op.signIn(start.location.href, sub));
    expect(back.searchParams.get('iss')).to.equal(sso.op.issuer);
    back.searchParams.set('iss', 'https://evil.test');
    expectFailurePage(await visitCallback(onApi(sso.api, back), start.loginCookie), 401, 'oidc_authentication_failed');
    expect((await members()).some((member) => member.email === email)).to.equal(false);
  });

  it('never sends the token request inward, even when a stored document was changed to point there (502)', async function () {
    const registration = await registerProvider(sso, owner.token, T, {}, 'tampered-store');
    await query(p.controlPlane.url, `update sso_registrations set metadata = jsonb_set(metadata, '{token_endpoint}', '"http://169.254.169.254/token"') where id = $1`, [
      registration.body.id,
    ]);
    const { sub } = account();
    const tokenRequests = () => sso.op.requests.filter((line) => line.startsWith('POST /token')).length;
    const before = tokenRequests();
    expectFailurePage(await signInWithProvider(sso, T, registration.provider, sub), 502, 'provider_config_error');
    expect(tokenRequests(), 'token requests the provider received').to.equal(before);
  });

  it('admits only verified emails in the registration’s domains (403), creating nobody', async function () {
    const outside = account({ email: `${newSub()}@elsewhere.test` });
    expectFailurePage(await signInWithProvider(sso, T, provider, outside.sub), 403, 'email_domain_not_allowed');
    const lookalike = account({ email: `${newSub()}@evilcorp.test` });
    expectFailurePage(await signInWithProvider(sso, T, provider, lookalike.sub), 403, 'email_domain_not_allowed');
    const unverified = account({ emailVerified: false });
    expectFailurePage(await signInWithProvider(sso, T, provider, unverified.sub), 403, 'email_not_verified');
    const emails = (await members()).map((member) => member.email);
    expect(emails).not.to.include.members([outside.email, lookalike.email, unverified.email]);
  });

  it('answers 404 for an unknown or disabled provider, also to a sign-in already under way', async function () {
    expectApiError(await sso.request('GET', `${T}/auth/oidc/providers/nobody/login`), 404, 'unknown_oidc_provider');
    const disabled = await registerProvider(sso, owner.token, T, {}, 'to-disable');
    const { sub } = account();
    const underway = await startLogin(sso, T, disabled.provider);
    const back = onApi(sso.api, await sso.op.signIn(underway.location.href, sub));
    const off = await sso.request('PUT', `${T}/auth/oidc/providers/to-disable`, { token: owner.token, json: { enabled: false } });
    expect(off.status).to.equal(200);
    expectApiError(await sso.request('GET', `${T}/auth/oidc/providers/to-disable/login`), 404, 'provider_disabled');
    expectFailurePage(await visitCallback(back, underway.loginCookie), 404, 'provider_disabled');
    const missingTenant = `${owner.D}/tenants/00000000-0000-4000-8000-000000000000`;
    expectApiError(await sso.request('GET', `${missingTenant}/auth/oidc/providers/${provider}/login`), 404, 'tenant_not_found');
  });

  it('never takes over a password account by its email; its signed-in owner links the provider instead', async function () {
    const carol = await createUser(p, owner.token, T, { email: `carol-${randomBytes(3).toString('hex')}@corp.test` });
    const second = await registerProvider(sso, owner.token, T, {}, 'second-idp');
    const sub = newSub();
    sso.op.addAccount({ sub, email: carol.email });

    const refused = await signInWithProvider(sso, T, second.provider, sub);
    expectFailurePage(refused, 409, 'account_exists');
    expect((await members()).filter((member) => member.email === carol.email).map((member) => member.id)).to.deep.equal([carol.id]);
    await loginUser(p, T, { email: carol.email, password: TEST_PASSWORD });

    expectApiError(await sso.request('GET', `${T}/auth/oidc/providers/${second.provider}/login?link=true`), 401, 'invalid_session');
    const signedIn = await loginUser(p, owner.D, carol);
    const linked = await signInWithProvider(sso, T, second.provider, sub, { link: true, cookie: `auth.session-token=${signedIn.session}` });
    expect(linked.status, linked.html).to.equal(200);
    expect(linked.fields.userId).to.equal(carol.id);
    const later = await signInWithProvider(sso, T, second.provider, sub);
    expect(later.status, later.html).to.equal(200);
    expect(later.fields.userId).to.equal(carol.id);
  });

  it('with just-in-time provisioning off, signs in only users who are already members (403 otherwise)', async function () {
    const strict = await registerProvider(sso, owner.token, T, { jitProvisioning: false }, 'members-only');
    const stranger = account();
    expectFailurePage(await signInWithProvider(sso, T, strict.provider, stranger.sub), 403, 'not_a_member');
    expect((await members()).map((member) => member.email)).not.to.include(stranger.email);

    // Someone who signed in to this tenant with the provisioning provider is a member: they may.
    const known = account();
    const first = await signInWithProvider(sso, T, provider, known.sub);
    expect(first.status).to.equal(200);
    const viaStrict = await signInWithProvider(sso, T, strict.provider, known.sub);
    expect(viaStrict.status, viaStrict.html).to.equal(200);
    expect(viaStrict.fields.userId).to.equal(first.fields.userId);
  });

  it('escapes every value it reflects into the form page', async function () {
    const db = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, db.token, db.D);
    const TT = `${db.D}/tenants/${tenant.id}`;
    const redirectURI = 'https://app.test/cb?next="><script>alert(1)</script>&a=\'b\'';
    const registration = await registerProvider(sso, db.token, TT, { redirectURI }, 'markup');
    const { sub } = account({ name: '<script>alert("name")</script>' });
    const callback = await signInWithProvider(sso, TT, registration.provider, sub);
    expect(callback.status, callback.html).to.equal(200);
    expect(callback.html.match(/<script>/g)).to.have.length(1);
    expect(callback.html).to.include('action="https://app.test/cb?next=&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#38;a=&#39;b&#39;"');
    expect(callback.headers.get('content-security-policy')).to.include('form-action https://app.test/cb;');

    // What the provider says lands on the failure page escaped too.
    const odd = account({ email: 'x@<svg onload=alert(1)>.test' });
    const refused = await signInWithProvider(sso, TT, registration.provider, odd.sub);
    expectFailurePage(refused, 403, 'email_domain_not_allowed');
    expect(refused.html).not.to.include('<svg');
    expect(refused.html).to.include('&#60;svg onload=alert(1)&#62;.test');
  });
});
