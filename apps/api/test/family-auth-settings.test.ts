import { expect } from 'chai';
import { httpClient, linkIn, query, type TestResponse } from '@platform/testing';
import { startTestMailServer } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';
import { pairOf } from './support/family-cookies.js';

/** Two companies' apps on one platform: both origins are in ALLOWED_ORIGINS, each is one database's app. */
const APP_X = 'https://x.example.test';
const APP_Y = 'https://y.example.test';
const NEW_PASSWORD = 'a brand new passphrase';

type Request = ReturnType<typeof httpClient>;
type Owner = Awaited<ReturnType<typeof developerWithReadyDatabase>>;
interface Member {
  id: string;
  email: string;
  tenants: string[];
  cookie: string;
  csrfToken: string;
}

/**
 * Each database's auth settings (self sign-up, its apps' origins) and what they guard, over HTTP
 * with real mail: sign-up that tells an address's owner and is throttled, mailed links that reach
 * only the database's own apps, reset tokens that a session alone never gets and that die with an
 * address change, and an invite link whose GET changes nothing.
 */
describe('the API family’s auth settings per database, and the links they guard', function () {
  this.timeout(90_000);
  let p: TestPlatform;
  let api: RunningApi;
  let request: Request;
  let mail: Awaited<ReturnType<typeof startTestMailServer>>;
  let x: Owner;
  let y: Owner;

  before(async function () {
    p = await platform();
    mail = await startTestMailServer();
    const env = { ...p.env, ALLOWED_ORIGINS: `${APP_X},${APP_Y}`, TRUSTED_PROXIES: '127.0.0.1,::1', SMTP_URL: mail.url, MAIL_FROM: 'platform@example.test' };
    api = await startApi(loadApiConfig(env));
    request = httpClient(api.url);
    [x, y] = [await developerWithReadyDatabase(p), await developerWithReadyDatabase(p)];
  });

  after(async function () {
    await api?.close();
    await mail?.close();
  });

  /** Each test sends from its own client address (X-Forwarded-For; the loopback is a trusted proxy): its budgets are its own. */
  function family(owner: Owner, client: string, app = APP_X) {
    const base = `/v2/databases/${owner.database.id}`;
    const headers = { 'nile-origin': app, 'nile-secure-cookies': 'false', 'x-forwarded-for': client };
    const call = (method: string, path: string, cookie: string | null, init: { json?: unknown; headers?: Record<string, string> } = {}) =>
      request(method, `${base}${path}`, { ...init, headers: { ...headers, ...(cookie ? { cookie } : {}), ...init.headers } });
    async function signUp(email = uniqueEmail('user'), newTenantName?: string): Promise<TestResponse> {
      const csrf = await call('GET', '/auth/csrf', null);
      const cookie = pairOf(csrf, 'nile.csrf-token');
      const answer = await call('POST', `/signup${newTenantName ? `?newTenantName=${encodeURIComponent(newTenantName)}` : ''}`, cookie, { json: { email, password: TEST_PASSWORD, csrfToken: csrf.body.csrfToken } });
      if (answer.status === 201) Object.assign(answer.body, { cookie: `${cookie}; ${pairOf(answer, 'nile.session-token')}`, csrfToken: csrf.body.csrfToken });
      return answer;
    }
    async function member(newTenantName?: string): Promise<Member> {
      const email = uniqueEmail('member');
      const answer = await signUp(email, newTenantName);
      expect(answer.status, answer.text).to.equal(201);
      return { id: answer.body.id, email, tenants: answer.body.tenants, cookie: answer.body.cookie, csrfToken: answer.body.csrfToken };
    }
    return { base, call, signUp, member };
  }

  const settingsOf = (owner: Owner, token = owner.token) => request('GET', `${owner.D}/auth-settings`, { token });
  const putSettings = (owner: Owner, json: unknown, token = owner.token) => request('PUT', `${owner.D}/auth-settings`, { token, json });

  it('a database’s developers read and change its auth settings; bad origins are refused and change nothing; others get 404', async function () {
    expect((await settingsOf(x)).body).to.deep.equal({ selfSignUp: false, appOrigins: [] });
    for (const origin of ['http://x.example.test', 'https://x.example.test/reset', 'https://x.example.test?a=1', 'x.example.test']) {
      expectApiError(await putSettings(x, { selfSignUp: true, appOrigins: [origin] }), 400, 'invalid_app_origin');
    }
    const many = Array.from({ length: 21 }, (_, i) => `https://app${i}.example.test`);
    expectApiError(await putSettings(x, { appOrigins: many }), 400, 'too_many_app_origins');
    expect((await settingsOf(x)).body).to.deep.equal({ selfSignUp: false, appOrigins: [] });
    // Another workspace's developer finds no such database.
    expectApiError(await settingsOf(x, y.token), 404, 'workspace_not_found');
    expectApiError(await putSettings(x, { selfSignUp: true }, y.token), 404, 'workspace_not_found');

    const put = await putSettings(x, { appOrigins: [`${APP_X}/`, APP_X, 'http://localhost:3000'] });
    expect(put.status, put.text).to.equal(200);
    expect(put.body).to.deep.equal({ selfSignUp: false, appOrigins: [APP_X, 'http://localhost:3000'] });
    expect((await putSettings(x, { selfSignUp: true })).body).to.deep.equal({ selfSignUp: true, appOrigins: [APP_X, 'http://localhost:3000'] });
    expect((await putSettings(x, { appOrigins: [APP_X] })).body).to.deep.equal({ selfSignUp: true, appOrigins: [APP_X] });
    // Y's settings are Y's own; two changes of different fields at once both hold; null follows the platform again.
    expect((await settingsOf(y)).body).to.deep.equal({ selfSignUp: false, appOrigins: [] });
    await Promise.all([putSettings(y, { selfSignUp: true }), putSettings(y, { appOrigins: [APP_Y] })]);
    expect((await settingsOf(y)).body).to.deep.equal({ selfSignUp: true, appOrigins: [APP_Y] });
    expect((await putSettings(y, { selfSignUp: null, appOrigins: [] })).body).to.deep.equal({ selfSignUp: false, appOrigins: [] });
  });

  it('sign-up follows the database’s setting; a taken address is 409 and its owner is mailed; throttled per address and per client', async function () {
    expect((await putSettings(x, { selfSignUp: true })).status).to.equal(200);
    const closed = await family(y, '198.51.100.1').signUp();
    expectApiError(closed, 403, 'sign_up_disabled');

    const { signUp } = family(x, '198.51.100.2');
    const email = uniqueEmail('owner');
    expect((await signUp(email)).status).to.equal(201);
    const taken = await signUp(email);
    expectApiError(taken, 409, 'email_taken');
    const told = await mail.waitForMailTo(email);
    expect(told.subject).to.equal('Someone tried to sign up with your address');
    expect(told.links).to.deep.equal([]);
    expectApiError(await signUp(email.toUpperCase()), 409, 'email_taken');
    await mail.waitForMailTo(email, { count: 2 });
    // The address's budget (3) is spent: the fourth try waits, and nobody is mailed.
    const throttled = await signUp(email);
    expectApiError(throttled, 429, 'too_many_attempts');
    expect(Number(throttled.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(String(await mail.waitForMailTo(email, { count: 3, timeoutMs: 500 }).catch((error: unknown) => error))).to.include('no mail number 3');

    // One client signs up 100 addresses (SIGN_UP_POLICY, apart from the mail budgets); the 101st waits, whatever the address.
    const busy = family(x, '198.51.100.3');
    for (let i = 0; i < 100; i++) expect((await busy.signUp()).status).to.equal(201);
    const fresh = uniqueEmail('late');
    expectApiError(await busy.signUp(fresh), 429, 'too_many_attempts');
    expect((await family(x, '198.51.100.4').signUp(fresh)).status).to.equal(201);
  });

  it('spends no sign-up budget on a refusal: a closed database, an unknown one', async function () {
    const victim = uniqueEmail('victim');
    const attacker = family(y, '198.51.100.20');
    // Sign-up closed on Y: however often an attacker tries the victim's address, it stays 403, never 429.
    for (let i = 0; i < 5; i++) expectApiError(await attacker.signUp(victim), 403, 'sign_up_disabled');
    const rows = () => query<{ n: number }>(p.controlPlane.url, 'select count(*)::int as n from sign_in_failures');
    const [before] = await rows();
    const unknown = family({ ...y, database: { ...y.database, id: crypto.randomUUID() } }, '198.51.100.21');
    expectApiError(await unknown.signUp(uniqueEmail('nobody')), 404, 'database_not_found');
    expect(await rows(), 'no throttle rows for a database that does not exist').to.deep.equal([before]);
    expect((await putSettings(y, { selfSignUp: true })).status).to.equal(200);
    try {
      // Once Y opens sign-up, the victim signs up at once, from the attacker's address too.
      expect((await attacker.signUp(victim)).status).to.equal(201);
    } finally {
      expect((await putSettings(y, { selfSignUp: null })).status).to.equal(200);
    }
  });

  it('mailed links point at an app only on the database’s own app origins, never at another company’s', async function () {
    expect((await putSettings(x, { selfSignUp: true, appOrigins: [APP_X] })).status).to.equal(200);
    const fromY = family(x, '198.51.100.10', APP_Y);
    const bob = await family(x, '198.51.100.10').member('Bob’s');
    // Y's app asks for a reset link for X's user, pointing at Y: it points at this API instead.
    const asked = await fromY.call('POST', '/auth/reset-password', null, { json: { email: bob.email, redirectUrl: `${APP_Y}/api/auth/reset-password`, callbackUrl: `${APP_Y}/reset` } });
    expect(asked.status, asked.text).to.equal(200);
    const received = await mail.waitForMailTo(bob.email);
    expect(received.links.filter((link) => link.startsWith(APP_Y))).to.deep.equal([]);
    linkIn(received, `http://api.test/v2/databases/${x.database.id}/auth/reset-password?`);
    // X's own app gets links to itself.
    await family(x, '198.51.100.10').call('POST', '/auth/reset-password', null, { json: { email: bob.email, redirectUrl: `${APP_X}/api/auth/reset-password` } });
    linkIn(await mail.waitForMailTo(bob.email, { count: 2 }), `${APP_X}/api/auth/reset-password?`);
    // And an invite asked for with Y's route goes to this API's invite page.
    const carol = uniqueEmail('carol');
    const invited = await fromY.call('POST', `/tenants/${bob.tenants[0]}/invite`, bob.cookie, {
      json: { identifier: carol, csrfToken: bob.csrfToken, redirectUrl: `${APP_Y}/api/tenants/${bob.tenants[0]}/invite`, callbackUrl: `${APP_Y}/welcome` },
    });
    expect(invited.status, invited.text).to.equal(201);
    const invite = await mail.waitForMailTo(carol);
    expect(invite.links.filter((link) => link.startsWith(APP_Y))).to.deep.equal([]);
    linkIn(invite, `http://api.test/v2/databases/${x.database.id}/tenants/${bob.tenants[0]}/invite?`);
  });

  it('a session alone gets no reset token; the link’s cookie is scoped to the reset route; only it gets its token back', async function () {
    const { call, member, base } = family(x, '198.51.100.20');
    const ann = await member();
    const asked = await call('POST', '/auth/reset-password', ann.cookie, { json: { email: ann.email, callbackUrl: `${APP_X}/reset` } });
    expect(asked.status, asked.text).to.equal(200);
    expect(asked.body).to.deep.equal({ url: `${APP_X}/reset` });
    const link = linkIn(await mail.waitForMailTo(ann.email), `http://api.test${base}/auth/reset-password?`);
    const opened = await request('GET', `${link.pathname}${link.search}`);
    expect(opened.status, opened.text).to.equal(200);
    const set = opened.headers.getSetCookie().find((cookie) => cookie.startsWith('nile.reset='))!;
    expect(set.split('; ').slice(1)).to.deep.equal([`Path=${base}/auth/reset-password`, 'HttpOnly', 'SameSite=Lax', 'Max-Age=3600']);
    // Holding the link's cookie, the SDK's resetPassword POST gets that same token back, and no new mail goes out.
    const again = await call('POST', '/auth/reset-password', `${ann.cookie}; ${pairOf(opened, 'nile.reset')}`, { json: { email: ann.email } });
    expect(again.status, again.text).to.equal(200);
    expect(new URL(again.body.url).searchParams.get('token')).to.equal(link.searchParams.get('token'));
    expect(String(await mail.waitForMailTo(ann.email, { count: 2, timeoutMs: 500 }).catch((error: unknown) => error))).to.include('no mail number 2');
    // A made-up reset cookie gets nothing but the mail.
    const forged = await call('POST', '/auth/reset-password', `${ann.cookie}; nile.reset=forged`, { json: { email: ann.email } });
    expect(forged.body.url).not.to.include('token=');
  });

  it('a reset token mailed to an address the account no longer has is refused, on the link and on the reset', async function () {
    const { call, member, base } = family(x, '198.51.100.30');
    const dan = await member();
    await call('POST', '/auth/reset-password', null, { json: { email: dan.email } });
    const link = linkIn(await mail.waitForMailTo(dan.email), `http://api.test${base}/auth/reset-password?`);
    const moved = uniqueEmail('moved');
    await query(p.postgres.urlFor(await physicalNameOf(p, x.database.id)), 'update users.users set email = $1 where id = $2', [moved, dan.id]);
    expectApiError(await request('GET', `${link.pathname}${link.search}`), 400, 'invalid_one_time_token');
    expectApiError(await call('PUT', '/auth/reset-password', null, { json: { email: dan.email, password: NEW_PASSWORD, token: link.searchParams.get('token') } }), 400, 'invalid_one_time_token');
    const csrf = await call('GET', '/auth/csrf', null);
    const signIn = (password: string) =>
      call('POST', '/auth/callback/credentials', pairOf(csrf, 'nile.csrf-token'), { json: { email: moved, password, csrfToken: csrf.body.csrfToken } });
    expect((await signIn(TEST_PASSWORD)).status).to.equal(200);
    expect((await signIn(NEW_PASSWORD)).status).to.equal(401);
  });
});
