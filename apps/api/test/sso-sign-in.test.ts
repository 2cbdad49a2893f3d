import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createTenant, createUser, developerWithReadyDatabase, expectApiError, loginUser, TEST_PASSWORD } from './support/fixtures.js';
import { databaseUrl } from '@platform/config';
import { fetchFrom, query } from '@platform/testing';
import { startTestOpenIdProvider } from '@platform/test-fixtures';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
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

  it('checks the ID token’s signature against the provider’s keys (401 when another key signed it)', async function () {
    const impostor = await startTestOpenIdProvider();
    try {
      const registration = await registerProvider(sso, owner.token, T, {}, 'other-keys');
      const otherKeys = ((await (await fetch(impostor.configUrl)).json()) as { jwks_uri: string }).jwks_uri;
      await query(p.controlPlane.url, `update sso_registrations set metadata = jsonb_set(metadata, '{jwks_uri}', to_jsonb($2::text)) where id = $1`, [
        registration.body.id,
        otherKeys,
      ]);
      const { sub, email } = account();
      expectFailurePage(await signInWithProvider(sso, T, registration.provider, sub), 401, 'oidc_authentication_failed');
      expect((await members()).some((member) => member.email === email)).to.equal(false);
    } finally {
      await impostor.close();
    }
  });

  it('answers no 5xx for text a provider sends that cannot be stored (NUL, lone surrogates)', async function () {
    const nulSubject = account();
    sso.op.idTokenOverride = (claims) => ({ ...claims, sub: 'a\u0000b' });
    expectFailurePage(await signInWithProvider(sso, T, provider, nulSubject.sub), 401, 'oidc_authentication_failed');
    const nulName = account();
    sso.op.idTokenOverride = (claims) => ({ ...claims, name: 'Eve\u0000', given_name: '\ud800' });
    const signedIn = await signInWithProvider(sso, T, provider, nulName.sub);
    expect(signedIn.status, signedIn.html).to.equal(200);
    expect((await members()).find((member) => member.id === signedIn.fields.userId)).to.include({ email: nulName.email, name: null });
  });

  it('lets one address have at most 100 sign-ins under way (429, Retry-After until the oldest expires), other addresses unaffected', async function () {
    const from = fetchFrom('127.0.9.1');
    const login = `${sso.api.url}${T}/auth/oidc/providers/${provider}/login`;
    for (let i = 0; i < 100; i++) expect((await from(login, { redirect: 'manual' })).status).to.equal(302);
    const refused = await from(login, { redirect: 'manual' });
    expect(refused.status).to.equal(429);
    expect(((await refused.json()) as { errorCode: string }).errorCode).to.equal('too_many_attempts');
    // The wait is until the oldest of the 100 expires (they live 10 minutes), not a fixed minute.
    expect(Number(refused.headers.get('retry-after'))).to.be.within(540, 600);
    expect((await fetchFrom('127.0.9.2')(login, { redirect: 'manual' })).status).to.equal(302);
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

    // Linking takes a live session, from a page of an allowed origin; and the provider must sign the user in again.
    const linkPath = `${T}/auth/oidc/providers/${second.provider}/link`;
    expectApiError(await sso.request('POST', linkPath, { headers: { origin: 'http://api.test' } }), 401, 'invalid_session');
    const signedIn = await loginUser(p, owner.D, carol);
    const cookie = `auth.session-token=${signedIn.session}`;
    expectApiError(await sso.request('POST', linkPath, { headers: { origin: 'https://evil.test', cookie } }), 403, 'cross_site_request');
    const start = await startLogin(sso, T, second.provider, { link: true, cookie });
    expect(start.location.searchParams.get('prompt')).to.equal('login');
    const linked = await signInWithProvider(sso, T, second.provider, sub, { link: true, cookie });
    expect(linked.status, linked.html).to.equal(200);
    expect(linked.fields.userId).to.equal(carol.id);
    const later = await signInWithProvider(sso, T, second.provider, sub);
    expect(later.status, later.html).to.equal(200);
    expect(later.fields.userId).to.equal(carol.id);
  });

  it('links nothing when the link is refused: a session ended meanwhile (401), or a tenant that does not provision its user (403)', async function () {
    const url = databaseUrl(p.postgres.adminUrl, await physicalNameOf(p, owner.database.id));
    const identities = (subject: string) => query(url, 'select user_id from auth.identities where subject = $1', [subject]);
    const dave = await createUser(p, owner.token, T, { email: `dave-${randomBytes(3).toString('hex')}@corp.test` });
    const sub = newSub();
    sso.op.addAccount({ sub, email: `${sub}@corp.test` });

    // The session that asked for the link ends before the provider sends the browser back.
    const session = await loginUser(p, owner.D, dave);
    const cookie = `auth.session-token=${session.session}`;
    const start = await startLogin(sso, T, provider, { link: true, cookie });
    const back = onApi(sso.api, await sso.op.signIn(start.location.href, sub));
    expect((await sso.request('POST', `${owner.D}/users/logout`, { token: session.jwt })).status).to.equal(204);
    expectFailurePage(await visitCallback(back, `${start.loginCookie}; ${cookie}`), 401, 'invalid_session');
    expect(await identities(sub)).to.deep.equal([]);

    // A tenant whose provider does not provision users, where dave is no member.
    const other = await createTenant(p, owner.token, owner.D);
    const strictT = `${owner.D}/tenants/${other.id}`;
    const strict = await registerProvider(sso, owner.token, strictT, { jitProvisioning: false }, 'strict-link');
    const again = await loginUser(p, owner.D, dave);
    const refused = await signInWithProvider(sso, strictT, strict.provider, sub, { link: true, cookie: `auth.session-token=${again.session}` });
    expectFailurePage(refused, 403, 'not_a_member');
    expect(await identities(sub)).to.deep.equal([]);
    // So a plain sign-in with that account is not dave.
    const plain = await signInWithProvider(sso, T, provider, sub);
    expect(plain.status, plain.html).to.equal(200);
    expect(plain.fields.userId).not.to.equal(dave.id);
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
    const { sub } = account();
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
