import { expect } from 'chai';
import { httpClient } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase, uniqueEmail, type TestTenant, type TestUser } from './support/fixtures.js';

const WINDOW_SECONDS = 2;

/** Waits past a throttling window. A wait, not a timing assertion. */
function waitPastWindow(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, WINDOW_SECONDS * 1000 + 100));
}

function expectThrottled(response: { status: number; body: any; text: string; headers: Headers }) {
  expectApiError(response, 429, 'too_many_attempts');
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter, 'Retry-After').to.match(/^\d+$/);
  expect(Number(retryAfter)).to.be.greaterThan(0).and.at.most(WINDOW_SECONDS);
  expect(response.headers.getSetCookie()).to.deep.equal([]);
}

describe('sign-in throttling', function () {
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let tenant: TestTenant;
  let T: string;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    tenant = await createTenant(p, owner.token, owner.D);
    T = `${owner.D}/tenants/${tenant.id}`;
  });

  /** An API of its own, on the shared control plane, with the given sign-in limits. */
  async function startThrottledApi(limits: { perEmail: number; perClient: number }): Promise<RunningApi> {
    return startApi(
      loadApiConfig({
        ...p.env,
        LOGIN_MAX_FAILURES_PER_EMAIL: String(limits.perEmail),
        LOGIN_MAX_FAILURES_PER_CLIENT: String(limits.perClient),
        LOGIN_FAILURE_WINDOW: String(WINDOW_SECONDS),
        PASSWORD_HASH_LOGN: '10',
      }),
    );
  }

  describe('per email (3 failures in 2 s)', function () {
    let api: RunningApi;
    let request: ReturnType<typeof httpClient>;

    before(async function () {
      api = await startThrottledApi({ perEmail: 3, perClient: 1000 });
      request = httpClient(api.url);
    });

    after(async function () {
      await api?.close();
    });

    const login = (path: string, email: string, password: string) => request('POST', `${path}/users/login`, { json: { email, password } });

    it('answers 429 with Retry-After after 3 wrong passwords, even to the right one; other emails are unaffected; the window ends', async function () {
      const victim = await createUser(p, owner.token, T);
      const bystander = await createUser(p, owner.token, T);
      for (let i = 0; i < 3; i++) expectApiError(await login(owner.D, victim.email, `wrong password ${i}`), 401, 'authentication_failed');

      expectThrottled(await login(owner.D, victim.email, victim.password));
      // The same email, whatever its case and whichever sign-in path of the database.
      expectThrottled(await login(owner.D, victim.email.toUpperCase(), victim.password));
      expectThrottled(await login(T, victim.email, victim.password));

      const other = await login(owner.D, bystander.email, bystander.password);
      expect(other.status, other.text).to.equal(200);
      expect(other.body.id).to.equal(bystander.id);

      await waitPastWindow();
      const after = await login(owner.D, victim.email, victim.password);
      expect(after.status, after.text).to.equal(200);
      expect(after.body.id).to.equal(victim.id);
    });

    it('lets no more than the limit of concurrent guesses through to the password check', async function () {
      const victim = await createUser(p, owner.token, T);
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login(owner.D, victim.email, `guess ${i}`)));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 401)).to.have.length(3);
      expect(statuses.filter((status) => status === 429)).to.have.length(9);
    });

    it('counts failures per account too, so spellings of the email that PostgreSQL folds alike do not reset the count', async function () {
      const victim = await createUser(p, owner.token, T, { email: `alice-${Date.now()}@example.test` });
      for (let i = 0; i < 3; i++) expectApiError(await login(owner.D, victim.email, `wrong ${i}`), 401, 'authentication_failed');
      // A capital dotted I: JavaScript lower-cases it to "i̇", PostgreSQL's lower() finds the same account.
      const variant = victim.email.replace('alice', 'alİce');
      expectThrottled(await login(owner.D, variant, victim.password));
    });

    it('counts the failures of one database only', async function () {
      const email = uniqueEmail();
      const here = await createUser(p, owner.token, T, { email });
      const elsewhere = await developerWithReadyDatabase(p);
      const theirTenant = await createTenant(p, elsewhere.token, elsewhere.D);
      const there = await createUser(p, elsewhere.token, `${elsewhere.D}/tenants/${theirTenant.id}`, { email });
      for (let i = 0; i < 3; i++) expectApiError(await login(owner.D, email, 'wrong password'), 401, 'authentication_failed');
      expectThrottled(await login(owner.D, email, here.password));
      const other = await login(elsewhere.D, email, there.password);
      expect(other.status, other.text).to.equal(200);
      expect(other.body.id).to.equal(there.id);
    });

    it('counts failures for unknown emails and for non-members too', async function () {
      const unknown = uniqueEmail('ghost');
      for (let i = 0; i < 3; i++) expectApiError(await login(owner.D, unknown, 'whatever password'), 401, 'authentication_failed');
      expectThrottled(await login(owner.D, unknown, 'whatever password'));

      const otherTenant = await createTenant(p, owner.token, owner.D);
      const outsider = await createUser(p, owner.token, `${owner.D}/tenants/${otherTenant.id}`);
      // The right password, but not a member of T: a failure like any other.
      for (let i = 0; i < 3; i++) expectApiError(await login(T, outsider.email, outsider.password), 401, 'authentication_failed');
      expectThrottled(await login(`${owner.D}/tenants/${otherTenant.id}`, outsider.email, outsider.password));
    });

    it('forgets an email’s failures when it signs in', async function () {
      const user: TestUser = await createUser(p, owner.token, T);
      for (let i = 0; i < 2; i++) expectApiError(await login(owner.D, user.email, 'wrong password'), 401, 'authentication_failed');
      expect((await login(owner.D, user.email, user.password)).status).to.equal(200);
      for (let i = 0; i < 2; i++) expectApiError(await login(owner.D, user.email, 'wrong password'), 401, 'authentication_failed');
      const response = await login(owner.D, user.email, user.password);
      expect(response.status, response.text).to.equal(200);
    });

    it('leaves the shared API’s sign-ins alone', async function () {
      const user = await createUser(p, owner.token, T);
      for (let i = 0; i < 3; i++) expectApiError(await login(owner.D, user.email, 'wrong password'), 401, 'authentication_failed');
      expectThrottled(await login(owner.D, user.email, user.password));
      const shared = await p.request('POST', `${owner.D}/users/login`, { json: { email: user.email, password: user.password } });
      expect(shared.status, shared.text).to.equal(200);
    });
  });

  describe('per client (4 failures in 2 s)', function () {
    let api: RunningApi;
    let request: ReturnType<typeof httpClient>;

    before(async function () {
      api = await startThrottledApi({ perEmail: 1000, perClient: 4 });
      request = httpClient(api.url);
    });

    after(async function () {
      await api?.close();
    });

    it('answers 429 to a client after 4 failures across emails, whatever it claims to forward, until the window ends', async function () {
      const users = [await createUser(p, owner.token, T), await createUser(p, owner.token, T)];
      const fresh = await createUser(p, owner.token, T);
      const attempts = [users[0].email, users[1].email, uniqueEmail(), uniqueEmail()];
      for (const email of attempts) {
        expectApiError(await request('POST', `${owner.D}/users/login`, { json: { email, password: 'wrong password' } }), 401, 'authentication_failed');
      }
      const credentials = { email: fresh.email, password: fresh.password };
      expectThrottled(await request('POST', `${owner.D}/users/login`, { json: credentials }));
      expectThrottled(await request('POST', `${T}/users/login`, { json: credentials }));
      expectThrottled(
        await request('POST', `${owner.D}/users/login`, { json: credentials, headers: { 'x-forwarded-for': '203.0.113.9', 'x-real-ip': '203.0.113.9' } }),
      );

      await waitPastWindow();
      const after = await request('POST', `${owner.D}/users/login`, { json: credentials });
      expect(after.status, after.text).to.equal(200);
      expect(after.body.id).to.equal(fresh.id);
    });
  });
});
