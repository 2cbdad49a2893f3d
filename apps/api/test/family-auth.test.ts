import { expect } from 'chai';
import { httpClient, type TestResponse } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

const APP_ORIGIN = 'http://app.test';
/** What the server SDK sends on every call (README "Apps built on the family's SDK"). */
const SDK_HEADERS = { 'nile-origin': APP_ORIGIN, 'nile-secure-cookies': 'false' };

type Request = ReturnType<typeof httpClient>;

/** The `name=value` part of the cookie a response sets under `name`, if it sets one. */
function setCookie(response: TestResponse, name: string): string | undefined {
  return response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
}

function pairOf(cookie: string | undefined): string {
  return (cookie ?? '').split(';')[0];
}

interface Member {
  id: string;
  tenants: string[];
  /** The cookies the SDK would hold: the CSRF cookie and the session. */
  cookie: string;
  csrfToken: string;
}

/** The auth API of one database, as the SDK calls it. */
function familyOf(request: Request, databaseId: string) {
  const base = `/v2/databases/${databaseId}`;
  async function csrf(headers: Record<string, string> = {}) {
    const answer = await request('GET', `${base}/auth/csrf`, { headers: { ...SDK_HEADERS, ...headers } });
    expect(answer.status, answer.text).to.equal(200);
    return { token: answer.body.csrfToken as string, cookie: pairOf(setCookie(answer, 'nile.csrf-token')), answer };
  }
  async function signUp(input: { email?: string; newTenantName?: string } = {}): Promise<Member> {
    const { token, cookie } = await csrf();
    const query = input.newTenantName ? `?newTenantName=${encodeURIComponent(input.newTenantName)}` : '';
    const answer = await request('POST', `${base}/signup${query}`, {
      headers: { ...SDK_HEADERS, cookie },
      json: { email: input.email ?? uniqueEmail('family'), password: TEST_PASSWORD, csrfToken: token },
    });
    expect(answer.status, answer.text).to.equal(201);
    return { id: answer.body.id, tenants: answer.body.tenants, cookie: `${cookie}; ${pairOf(setCookie(answer, 'nile.session-token'))}`, csrfToken: token };
  }
  const call = (method: string, path: string, member: Pick<Member, 'cookie'> | null, init: { json?: unknown; headers?: Record<string, string> } = {}) =>
    request(method, `${base}${path}`, { ...init, headers: { ...SDK_HEADERS, ...(member ? { cookie: member.cookie } : {}), ...init.headers } });
  return { base, csrf, signUp, call };
}

describe('the API family’s auth API over HTTP: CSRF, cookies, tenants and databases apart', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let api: RunningApi;
  let request: Request;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let family: ReturnType<typeof familyOf>;

  before(async function () {
    p = await platform();
    api = await startApi(loadApiConfig({ ...p.env, ALLOWED_ORIGINS: APP_ORIGIN, SELF_SIGN_UP: 'true', TENANT_MEMBERS_LINK_USERS: 'true' }));
    request = httpClient(api.url);
    owner = await developerWithReadyDatabase(p);
    family = familyOf(request, owner.database.id);
  });

  after(async function () {
    await api?.close();
  });

  it('GET /auth/csrf sets a token|mac cookie, and keeps it while the one sent is valid', async function () {
    const first = await family.csrf();
    expect(first.token).to.match(/^[0-9a-f]{64}$/);
    const cookie = setCookie(first.answer, 'nile.csrf-token') ?? '';
    expect(cookie).to.match(new RegExp(`^nile\\.csrf-token=${first.token}%7C[0-9a-f]{64}; `));
    expect(cookie.split('; ').slice(1)).to.deep.equal(['Path=/', 'HttpOnly', 'SameSite=Lax']);

    const again = await family.csrf({ cookie: first.cookie });
    expect(again.token).to.equal(first.token);
    expect(again.answer.headers.getSetCookie()).to.deep.equal([]);

    // A cookie whose MAC does not hold is replaced.
    const forged = await family.csrf({ cookie: `nile.csrf-token=${'a'.repeat(64)}%7C${'b'.repeat(64)}` });
    expect(forged.token).not.to.equal('a'.repeat(64));
    expect(setCookie(forged.answer, 'nile.csrf-token')).to.be.a('string');
  });

  it('refuses sign-up, sign-in and sign-out whose CSRF token is missing or wrong (403, no effect)', async function () {
    const email = uniqueEmail('csrf');
    const { token, cookie } = await family.csrf();
    const json = { email, password: TEST_PASSWORD, csrfToken: token };
    expectApiError(await family.call('POST', '/signup', null, { json }), 403, 'csrf_failed');
    expectApiError(await family.call('POST', '/signup', { cookie }, { json: { ...json, csrfToken: 'f'.repeat(64) } }), 403, 'csrf_failed');
    expectApiError(await family.call('POST', '/signup', { cookie }, { json: { email, password: TEST_PASSWORD } }), 403, 'csrf_failed');
    // Nothing was created: the email is free, and signs up now.
    const member = await family.signUp({ email });

    const signIn = { email, password: TEST_PASSWORD };
    expectApiError(await family.call('POST', '/auth/callback/credentials', { cookie }, { json: { ...signIn, csrfToken: 'f'.repeat(64) } }), 403, 'csrf_failed');
    const signedIn = await family.call('POST', '/auth/callback/credentials', { cookie }, { json: { ...signIn, csrfToken: token, callbackUrl: `${APP_ORIGIN}/home` } });
    expect(signedIn.status, signedIn.text).to.equal(200);
    expect(signedIn.body).to.deep.equal({ url: `${APP_ORIGIN}/home` });
    expect(signedIn.headers.get('location')).to.equal(`${APP_ORIGIN}/home`);
    expect(setCookie(signedIn, 'nile.callback-url')).to.match(/^nile\.callback-url=http%3A%2F%2Fapp\.test%2Fhome; Path=\/; HttpOnly; SameSite=Lax$/);
    const wrong = await family.call('POST', '/auth/callback/credentials', { cookie }, { json: { ...signIn, password: 'wrong password!', csrfToken: token } });
    expectApiError(wrong, 401);
    expect(wrong.headers.get('location')).to.equal(`${TEST_AUDIENCE}${family.base}/auth/error?error=CredentialsSignin`);
    expect(setCookie(wrong, 'nile.session-token')).to.equal(undefined);
    // A callback URL on a foreign origin is not followed.
    const foreign = await family.call('POST', '/auth/callback/credentials', { cookie }, { json: { ...signIn, csrfToken: token, callbackUrl: 'https://evil.test/' } });
    expect(foreign.body).to.deep.equal({ url: APP_ORIGIN });

    expectApiError(await family.call('POST', '/auth/signout', member, { json: { csrfToken: 'f'.repeat(64) } }), 403, 'csrf_failed');
    const session = await family.call('GET', '/auth/session', member);
    expect(session.body.user).to.include({ id: member.id, email });
    const out = await family.call('POST', '/auth/signout', member, { json: { csrfToken: member.csrfToken, json: true } });
    expect(out.status, out.text).to.equal(200);
    expect(setCookie(out, 'nile.session-token')).to.equal('nile.session-token=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0');
    expect((await family.call('GET', '/auth/session', member)).body).to.deep.equal({});
    expectApiError(await family.call('GET', '/me', member), 401, 'invalid_session');
  });

  it('refuses REST changes without the SDK’s nile-origin, or from a foreign origin (403, no effect)', async function () {
    const member = await family.signUp({ newTenantName: 'Kept' });
    const [tenant] = member.tenants;
    expectApiError(await family.call('PUT', '/me', member, { json: { name: 'X' }, headers: { 'nile-origin': '' } }), 403, 'csrf_failed');
    expectApiError(await family.call('PUT', '/me', member, { json: { name: 'X' }, headers: { 'nile-origin': 'https://evil.test' } }), 403, 'csrf_failed');
    expectApiError(await family.call('PUT', '/me', member, { json: { name: 'X' }, headers: { origin: 'https://evil.test' } }), 403, 'cross_site_request');
    expectApiError(await family.call('PUT', `/tenants/${tenant}`, member, { json: { name: 'X' }, headers: { 'nile-origin': '' } }), 403, 'csrf_failed');
    expectApiError(await family.call('POST', '/tenants', member, { json: { name: 'X' }, headers: { 'nile-origin': '' } }), 403, 'csrf_failed');
    expectApiError(await family.call('DELETE', '/me', member, { headers: { 'nile-origin': '' } }), 403, 'csrf_failed');

    const me = await family.call('GET', '/me', member);
    expect(me.body.name).to.equal(null);
    expect(me.body.tenants).to.deep.equal([tenant]);
    expect((await family.call('GET', `/tenants/${tenant}`, member)).body.name).to.equal('Kept');
  });

  it('a member of tenant A gets 404 for everything of tenant B', async function () {
    const a = await family.signUp({ newTenantName: 'A' });
    const b = await family.signUp({ newTenantName: 'B' });
    const [tenantB] = b.tenants;
    const notFound = (response: TestResponse) => expectApiError(response, 404, 'tenant_not_found');
    notFound(await family.call('GET', `/tenants/${tenantB}`, a));
    notFound(await family.call('PUT', `/tenants/${tenantB}`, a, { json: { name: 'taken over' } }));
    notFound(await family.call('DELETE', `/tenants/${tenantB}`, a));
    notFound(await family.call('GET', `/tenants/${tenantB}/users`, a));
    notFound(await family.call('PUT', `/tenants/${tenantB}/users/${a.id}/link`, a));
    notFound(await family.call('DELETE', `/tenants/${tenantB}/users/${b.id}/link`, a));
    expectApiError(await family.call('GET', `/users/${b.id}/tenants`, a), 404, 'user_not_found');
    notFound(await family.call('POST', `/users?tenantId=${tenantB}`, a, { json: { email: uniqueEmail('intruder'), password: TEST_PASSWORD } }));
    // B's tenant is as it was, with B alone.
    expect((await family.call('GET', `/tenants/${tenantB}`, b)).body.name).to.equal('B');
    expect((await family.call('GET', `/tenants/${tenantB}/users`, b)).body.map((user: { id: string }) => user.id)).to.deep.equal([b.id]);
  });

  it('refuses a session of database X on database Y', async function () {
    const other = await developerWithReadyDatabase(p);
    const onY = familyOf(request, other.database.id);
    const member = await family.signUp({ newTenantName: 'X' });
    expect((await onY.call('GET', '/auth/session', member)).body).to.deep.equal({});
    expectApiError(await onY.call('GET', '/me', member), 401, 'invalid_session');
    expectApiError(await onY.call('GET', '/tenants/' + member.tenants[0], member), 401, 'invalid_session');
    expectApiError(await onY.call('POST', '/tenants', member, { json: { name: 'Y' } }), 401, 'invalid_session');
    // An unknown database: no session either, and 404 where one is needed.
    const unknown = familyOf(request, '00000000-0000-4000-8000-000000000000');
    expect((await unknown.call('GET', '/auth/session', member)).body).to.deep.equal({});
    expectApiError(await unknown.call('GET', '/me', member), 404, 'database_not_found');
  });

  it('prefixes and secures the cookies when the SDK asks for secure cookies, and reads only the prefixed session', async function () {
    const { answer, token } = await family.csrf({ 'nile-secure-cookies': 'true' });
    const cookie = setCookie(answer, '__Secure-nile.csrf-token') ?? '';
    expect(cookie.split('; ').slice(1)).to.deep.equal(['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']);
    const email = uniqueEmail('secure');
    const signedUp = await family.call('POST', '/signup', { cookie: pairOf(cookie) }, { json: { email, password: TEST_PASSWORD, csrfToken: token }, headers: { 'nile-secure-cookies': 'true' } });
    expect(signedUp.status, signedUp.text).to.equal(201);
    const session = setCookie(signedUp, '__Secure-nile.session-token') ?? '';
    expect(session).to.match(/^__Secure-nile\.session-token=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
    const value = pairOf(session).split('=')[1];
    const secure = { 'nile-secure-cookies': 'true' };
    expect((await family.call('GET', '/me', { cookie: `__Secure-nile.session-token=${value}` }, { headers: secure })).body.email).to.equal(email);
    // Unprefixed, the same token is not read where cookies are secure.
    expectApiError(await family.call('GET', '/me', { cookie: `nile.session-token=${value}` }, { headers: secure }), 401, 'invalid_session');
  });

  it('keeps to the default rules where the platform does not open them: no self sign-up, members neither delete tenants nor add users', async function () {
    const strict = familyOf(p.request, owner.database.id);
    const { token, cookie } = await strict.csrf();
    expectApiError(await strict.call('POST', '/signup', { cookie }, { json: { email: uniqueEmail('closed'), password: TEST_PASSWORD, csrfToken: token } }), 403, 'sign_up_disabled');
    // A member signed up where it is open; on the strict API (same database, same session) the defaults hold.
    const member = await family.signUp({ newTenantName: 'Strict' });
    const other = await family.signUp();
    const [tenant] = member.tenants;
    const own = { 'nile-origin': 'http://api.test' };
    expectApiError(await strict.call('DELETE', `/tenants/${tenant}`, member, { headers: own }), 403, 'developer_token_required');
    expectApiError(await strict.call('PUT', `/tenants/${tenant}/users/${other.id}/link`, member, { headers: own }), 403, 'developer_token_required');
    expectApiError(await strict.call('POST', `/users?tenantId=${tenant}`, member, { json: { email: uniqueEmail('made'), password: TEST_PASSWORD }, headers: own }), 403, 'developer_token_required');
    expect((await strict.call('GET', `/tenants/${tenant}`, member)).body.name).to.equal('Strict');
  });

  it('declares a cookie security scheme on every /v2 operation', async function () {
    const doc = (await request('GET', '/openapi.json')).body;
    const operations = Object.entries(doc.paths as Record<string, Record<string, { security: object[] }>>)
      .filter(([path]) => path.startsWith('/v2/'))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, security: operation.security })));
    expect(operations.length).to.be.greaterThan(15);
    for (const { at, security } of operations) {
      const expected = at === 'POST /v2/databases/{database}/tenants/{tenantId}/users' ? [{ sessionCookieAuth: [] }, { familySessionCookie: [] }] : [{ familySessionCookie: [] }];
      expect(security, at).to.deep.equal(expected);
    }
    expect(doc.components.securitySchemes.familySessionCookie).to.include({ type: 'apiKey', in: 'cookie', name: 'nile.session-token' });
    expect(doc.components.securitySchemes.sessionCookieAuth).to.include({ type: 'apiKey', in: 'cookie', name: 'auth.session-token' });
  });
});
