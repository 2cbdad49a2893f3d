import { expect } from 'chai';
import { httpClient, linkIn, query, startTestMailServer } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';
import { pairOf } from './support/family-cookies.js';

const APP_ORIGIN = 'http://app.test';
/** The client address rides in X-Forwarded-For (the loopback is a trusted proxy here): this file's mail budget is its own. */
const SDK_HEADERS = { 'nile-origin': APP_ORIGIN, 'nile-secure-cookies': 'false', 'x-forwarded-for': '192.0.2.10' };
const NEW_PASSWORD = 'a brand new passphrase';

type Request = ReturnType<typeof httpClient>;
interface Member {
  id: string;
  email: string;
  tenants: string[];
  cookie: string;
  csrfToken: string;
}

/**
 * The mail routes of the family surface over HTTP, as the SDK calls them: a replayed, expired or
 * other account's token is refused and changes nothing; tenants stay apart; CSRF holds.
 */
describe('the API family’s mail routes over HTTP: tokens refused, tenants apart', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let api: RunningApi;
  let request: Request;
  let mail: Awaited<ReturnType<typeof startTestMailServer>>;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let base: string;

  before(async function () {
    p = await platform();
    mail = await startTestMailServer();
    api = await startApi(loadApiConfig({ ...p.env, ALLOWED_ORIGINS: APP_ORIGIN, SELF_SIGN_UP: 'true', TRUSTED_PROXIES: '127.0.0.1,::1', SMTP_URL: mail.url, MAIL_FROM: 'platform@example.test' }));
    request = httpClient(api.url);
    owner = await developerWithReadyDatabase(p);
    base = `/v2/databases/${owner.database.id}`;
  });

  after(async function () {
    await api?.close();
    await mail?.close();
  });

  const call = (method: string, path: string, member: Pick<Member, 'cookie'> | null, init: { json?: unknown; headers?: Record<string, string> } = {}) =>
    request(method, `${base}${path}`, { ...init, headers: { ...SDK_HEADERS, ...(member ? { cookie: member.cookie } : {}), ...init.headers } });

  async function signUp(newTenantName?: string): Promise<Member> {
    const csrf = await call('GET', '/auth/csrf', null);
    const cookie = pairOf(csrf, 'nile.csrf-token');
    const email = uniqueEmail('mail');
    const query = newTenantName ? `?newTenantName=${encodeURIComponent(newTenantName)}` : '';
    const answer = await call('POST', `/signup${query}`, { cookie }, { json: { email, password: TEST_PASSWORD, csrfToken: csrf.body.csrfToken } });
    expect(answer.status, answer.text).to.equal(201);
    return { id: answer.body.id, email, tenants: answer.body.tenants, cookie: `${cookie}; ${pairOf(answer, 'nile.session-token')}`, csrfToken: csrf.body.csrfToken };
  }

  async function signsIn(email: string, password: string): Promise<number> {
    const csrf = await call('GET', '/auth/csrf', null);
    return (await call('POST', '/auth/callback/credentials', { cookie: pairOf(csrf, 'nile.csrf-token') }, { json: { email, password, csrfToken: csrf.body.csrfToken } })).status;
  }

  /** Asks for a reset of the address and answers the token of the mail it gets (the nth to that address). */
  async function resetToken(email: string, count: number): Promise<string> {
    // The app asks for a link to its own route: its origin is not among the database's app origins, so the token's link is this API's.
    const asked = await call('POST', '/auth/reset-password', null, { json: { email, callbackUrl: `${APP_ORIGIN}/reset`, redirectUrl: `${APP_ORIGIN}/api/auth/reset-password` } });
    expect(asked.status, asked.text).to.equal(200);
    expect(asked.body).to.deep.equal({ url: `${APP_ORIGIN}/reset` });
    const received = await mail.waitForMailTo(email, { count });
    expect(received.links.filter((link) => link.startsWith(APP_ORIGIN) && link.includes('token='))).to.deep.equal([]);
    return linkIn(received, 'http://api.test/v2/databases/').searchParams.get('token')!;
  }

  it('a reset token works once, for its own address, until it expires; refused, nothing changes', async function () {
    const bob = await signUp();
    const carol = await signUp();
    // An address without an account gets the same answer, and no mail.
    const nobody = await call('POST', '/auth/reset-password', null, { json: { email: uniqueEmail('nobody'), callbackUrl: `${APP_ORIGIN}/reset` } });
    expect(nobody.status).to.equal(200);
    expect(nobody.body).to.deep.equal({ url: `${APP_ORIGIN}/reset` });

    const token = await resetToken(bob.email, 1);
    // For another account: the link's GET and the PUT both refuse it, and it stays usable.
    expectApiError(await call('GET', `/auth/reset-password?token=${token}&identifier=${encodeURIComponent(carol.email)}`, null), 400, 'invalid_one_time_token');
    expectApiError(await call('PUT', '/auth/reset-password', null, { json: { email: carol.email, password: NEW_PASSWORD, token } }), 400, 'invalid_one_time_token');
    expect(await signsIn(carol.email, TEST_PASSWORD)).to.equal(200);
    // Without the SDK's nile-origin: 403, nothing changes.
    expectApiError(await request('PUT', `${base}/auth/reset-password`, { json: { email: bob.email, password: NEW_PASSWORD, token } }), 403, 'csrf_failed');

    const opened = await call('GET', `/auth/reset-password?token=${token}&identifier=${encodeURIComponent(bob.email)}&callbackUrl=${encodeURIComponent(`${APP_ORIGIN}/reset`)}`, null);
    expect(opened.status, opened.text).to.equal(200);
    expect(opened.headers.get('location')).to.equal(`${APP_ORIGIN}/reset`);
    const reset = await call('PUT', '/auth/reset-password', { cookie: pairOf(opened, 'nile.reset') }, { json: { email: bob.email, password: NEW_PASSWORD } });
    expect(reset.status, reset.text).to.equal(200);
    expect(pairOf(reset, 'nile.session-token')).to.match(/^nile\.session-token=.+/);
    // Bob's old session ended with the reset.
    expect((await call('GET', '/auth/session', bob)).body).to.deep.equal({});

    // Replayed: refused, the password stays the new one.
    expectApiError(await call('PUT', '/auth/reset-password', null, { json: { email: bob.email, password: 'a replayed passphrase', token } }), 400, 'invalid_one_time_token');
    expect(await signsIn(bob.email, NEW_PASSWORD)).to.equal(200);

    // Expired: refused, nothing changes.
    const stale = await resetToken(bob.email, 2);
    const physical = await physicalNameOf(p, owner.database.id);
    await query(p.postgres.urlFor(physical), `update auth.one_time_tokens set expires = now() - interval '1 second' where purpose = 'password_reset' and consumed is null and revoked is null`);
    expectApiError(await call('PUT', '/auth/reset-password', null, { json: { email: bob.email, password: 'an expired passphrase', token: stale } }), 400, 'invalid_one_time_token');
    expect(await signsIn(bob.email, NEW_PASSWORD)).to.equal(200);
  });

  it('a verification token is its own account’s: another’s session, a replay or an expired one is refused', async function () {
    const eve = await signUp();
    const frank = await signUp();
    const sent = await call('POST', '/auth/verify-email', eve, { json: { csrfToken: eve.csrfToken, callbackUrl: `${APP_ORIGIN}/verified` } });
    expect(sent.status, sent.text).to.equal(200);
    expect(sent.body).to.deep.equal({ url: `${APP_ORIGIN}/verified`, sent: true });
    const link = linkIn(await mail.waitForMailTo(eve.email), 'http://api.test');
    const path = `/auth/verify-email${link.search}`;
    // CSRF missing: 403, no mail.
    expectApiError(await call('POST', '/auth/verify-email', frank, { json: {} }), 403, 'csrf_failed');

    // Frank's session with Eve's link: refused, and the token stays Eve's to use.
    expectApiError(await call('GET', path, frank), 400, 'invalid_one_time_token');
    expect((await call('GET', '/auth/session', eve)).body.user.emailVerified).to.equal(null);
    // Eve clicks it: her browser asks for HTML and is sent on to the app's page.
    const verified = await fetch(`${api.url}${base}${path}`, { headers: { cookie: eve.cookie, accept: 'text/html' }, redirect: 'manual' });
    expect(verified.status, await verified.text()).to.equal(303);
    expect(verified.headers.get('location')).to.equal(`${APP_ORIGIN}/verified`);
    expect((await call('GET', '/auth/session', eve)).body.user.emailVerified).to.be.a('string');
    expectApiError(await call('GET', path, null), 400, 'invalid_one_time_token');
    // Verified already: no mail, the same answer.
    expect((await call('POST', '/auth/verify-email', eve, { json: { csrfToken: eve.csrfToken } })).body).to.include({ sent: false });

    await call('POST', '/auth/verify-email', frank, { json: { csrfToken: frank.csrfToken } });
    const frankLink = linkIn(await mail.waitForMailTo(frank.email), 'http://api.test');
    const physical = await physicalNameOf(p, owner.database.id);
    await query(p.postgres.urlFor(physical), `update auth.one_time_tokens set expires = now() - interval '1 second' where purpose = 'email_verification' and consumed is null`);
    expectApiError(await call('GET', `/auth/verify-email${frankLink.search}`, frank), 400, 'invalid_one_time_token');
    expect((await call('GET', '/auth/session', frank)).body.user.emailVerified).to.equal(null);
  });

  it('a member of tenant A gets 404 for tenant B’s invites; an invite works only for its tenant and address', async function () {
    const alice = await signUp('A');
    const bea = await signUp('B');
    const [a] = alice.tenants;
    const [b] = bea.tenants;
    const invitee = uniqueEmail('invitee');
    const invited = await call('POST', `/tenants/${b}/invite`, bea, { json: { identifier: invitee, csrfToken: bea.csrfToken } });
    expect(invited.status, invited.text).to.equal(201);
    const token = linkIn(await mail.waitForMailTo(invitee), 'http://api.test').searchParams.get('token')!;

    expectApiError(await call('GET', `/tenants/${b}/invites`, alice), 404, 'tenant_not_found');
    expectApiError(await call('POST', `/tenants/${b}/invite`, alice, { json: { identifier: uniqueEmail('x'), csrfToken: alice.csrfToken } }), 404, 'tenant_not_found');
    expectApiError(await call('DELETE', `/tenants/${b}/invite/${invited.body.id}`, alice), 404, 'tenant_not_found');
    // B's invite through A's route, or for another address: refused, still pending.
    expectApiError(await call('PUT', `/tenants/${a}/invite`, null, { json: { identifier: invitee, token } }), 400, 'invalid_one_time_token');
    expectApiError(await call('PUT', `/tenants/${b}/invite`, null, { json: { identifier: alice.email, token } }), 400, 'invalid_one_time_token');
    expect((await call('GET', `/tenants/${b}/invites`, bea)).body.map((invite: { id: string }) => invite.id)).to.deep.equal([invited.body.id]);
    // CSRF missing: 403, no invite.
    expectApiError(await call('POST', `/tenants/${a}/invite`, alice, { json: { identifier: uniqueEmail('y') } }), 403, 'csrf_failed');
    expect((await call('GET', `/tenants/${a}/invites`, alice)).body).to.deep.equal([]);

    const accepted = await call('PUT', `/tenants/${b}/invite`, null, { json: { identifier: invitee, token } });
    expect(accepted.status, accepted.text).to.equal(200);
    expect(accepted.body).to.include({ email: invitee }).and.to.have.property('tenants').deep.equal([b]);
    expectApiError(await call('PUT', `/tenants/${b}/invite`, null, { json: { identifier: invitee, token } }), 400, 'invalid_one_time_token');
  });

  it('throttles forgot-password per address asked about, account or not: 429 with Retry-After', async function () {
    const email = uniqueEmail('nobody');
    const ask = () => call('POST', '/auth/reset-password', null, { json: { email }, headers: { 'x-forwarded-for': '192.0.2.11' } });
    for (let i = 0; i < 3; i += 1) expect((await ask()).status).to.equal(200);
    const throttled = await ask();
    expectApiError(throttled, 429, 'too_many_attempts');
    expect(Number(throttled.headers.get('retry-after'))).to.be.greaterThan(0);
  });

  it('MFA answers not enabled', async function () {
    expectApiError(await call('PUT', '/auth/mfa', null, { json: { scope: 'setup', method: 'authenticator' } }), 400, 'mfa_not_enabled');
  });
});
