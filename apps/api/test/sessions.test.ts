import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { httpClient } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, createTenant, createUser, developerWithReadyDatabase, loginUser, uniqueEmail, type TestTenant, type TestUser } from './support/fixtures.js';

const USER_KEYS = ['id', 'email', 'name', 'givenName', 'familyName', 'picture', 'created', 'emailVerified', 'updated'];

describe('v2 create-user with the session cookie', function () {
  let p: TestPlatform;
  /** An API of its own where members create users (TENANT_MEMBERS_CREATE_USERS=true), on the suite's control plane. */
  let membersApi: RunningApi;
  let v2: ReturnType<typeof httpClient>;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let tenant: TestTenant;
  let other: TestTenant;
  let T: string;
  let member: TestUser;
  let V2: string;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    tenant = await createTenant(p, owner.token, owner.D, { name: 'Cookie tenant' });
    other = await createTenant(p, owner.token, owner.D, { name: 'Other tenant' });
    T = `${owner.D}/tenants/${tenant.id}`;
    const created = await createUser(p, owner.token, T);
    // The cookie of a sign-in, as a browser would hold it.
    member = await loginUser(p, T, created);
    V2 = `/v2/databases/${owner.database.id}/tenants/${tenant.id}/users`;
    membersApi = await startApi(loadApiConfig({ ...p.env, TENANT_MEMBERS_CREATE_USERS: 'true' }));
    v2 = httpClient(membersApi.url);
  });

  after(async function () {
    this.timeout(90_000);
    await membersApi?.close();
  });

  it('answers a member 403 developer_token_required by default, whatever the email, and creates nothing (issue 11, finding 5)', async function () {
    const before = await memberIds();
    const elsewhere = await createUser(p, owner.token, `${owner.D}/tenants/${other.id}`);
    const bodies = new Set<string>();
    for (const email of [uniqueEmail('free'), elsewhere.email]) {
      const refused = await p.request('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) });
      expectApiError(refused, 403, 'developer_token_required');
      bodies.add(refused.text);
    }
    expect(bodies.size).to.equal(1);
    expect(await memberIds()).to.deep.equal(before);
  });

  function cookie(session: string): Record<string, string> {
    return { cookie: `auth.session-token=${session}` };
  }

  async function memberIds(of = T): Promise<string[]> {
    const listed = await p.request('GET', `${of}/users`, { token: owner.token });
    expect(listed.status, listed.text).to.equal(200);
    return listed.body.map((user: { id: string }) => user.id);
  }

  /** Whether a user with this email exists in the database: a developer's POST T/users says. */
  async function expectEmailFree(email: string) {
    await createUser(p, owner.token, `${owner.D}/tenants/${other.id}`, { email });
  }

  it('answers 201 with the User, created as a member of the tenant, who can sign in to it', async function () {
    const email = uniqueEmail('v2');
    const json = { email, password: TEST_PASSWORD, name: 'Vera Two', givenName: 'Vera', familyName: 'Two', picture: 'https://example.test/v.png' };
    const created = await v2('POST', V2, { json, headers: cookie(member.session) });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.have.all.keys(...USER_KEYS);
    expect(created.body).to.include({ email, name: 'Vera Two', givenName: 'Vera', familyName: 'Two', picture: 'https://example.test/v.png', emailVerified: null });
    // The caller stays signed in as themselves: no cookie for the new user.
    expect(created.headers.getSetCookie()).to.deep.equal([]);

    const listed = await p.request('GET', `${T}/users`, { token: owner.token });
    expect(listed.body.find((user: { id: string }) => user.id === created.body.id)).to.deep.equal(created.body);
    const signedIn = await loginUser(p, T, { email, password: TEST_PASSWORD });
    expect(signedIn.id).to.equal(created.body.id);
    expect(signedIn.tenants).to.deep.equal([tenant.id]);
    // The caller's own session still works.
    expect((await p.request('GET', `${owner.D}/users/me`, { token: member.jwt })).body.id).to.equal(member.id);
  });

  it('accepts only email and password too', async function () {
    const email = uniqueEmail();
    const created = await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ email, name: null, givenName: null, familyName: null, picture: null });
    expect(await memberIds()).to.include(created.body.id);
  });

  it('accepts a request whose Origin or Referer is the API’s own public origin', async function () {
    for (const headers of [{ origin: TEST_AUDIENCE }, { referer: `${TEST_AUDIENCE}/signup?x=1` }] as Record<string, string>[]) {
      const created = await v2('POST', V2, { json: { email: uniqueEmail(), password: TEST_PASSWORD }, headers: { ...headers, ...cookie(member.session) } });
      expect(created.status, `${JSON.stringify(headers)}: ${created.text}`).to.equal(201);
      expect(await memberIds()).to.include(created.body.id);
    }
  });

  it('answers 409 email_taken for an email in use in the database', async function () {
    const before = await memberIds();
    const json = { email: member.email.toUpperCase(), password: TEST_PASSWORD };
    expectApiError(await v2('POST', V2, { json, headers: cookie(member.session) }), 409, 'email_taken');
    expect(await memberIds()).to.deep.equal(before);
  });

  describe('refusals, each creating nobody', function () {
    let before: string[];
    let email: string;
    beforeEach(async function () {
      before = await memberIds();
      email = uniqueEmail('refused');
    });
    afterEach(async function () {
      if (this.currentTest?.state !== 'passed') return;
      expect(await memberIds()).to.deep.equal(before);
      await expectEmailFree(email);
    });

    it('answers 401 without a cookie', async function () {
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD } }), 401);
    });

    it('answers 401 without a cookie before reading the body, with no Bearer challenge', async function () {
      for (const request of [
        { json: { email, password: 'short' } },
        { raw: '{not json', contentType: 'application/json' },
      ]) {
        const response = await v2('POST', V2, request);
        expectApiError(response, 401, 'invalid_session');
        expect(response.headers.get('www-authenticate')).to.equal(null);
      }
    });

    it('answers 401 with a bogus, an empty or a differently named cookie', async function () {
      for (const headers of [
        cookie(randomBytes(32).toString('base64url')),
        cookie(''),
        cookie('x'),
        { cookie: `session=${member.session}` },
        { cookie: `__Secure-auth.session-token=${member.session}` },
      ]) {
        const response = await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers });
        expect(response.status, JSON.stringify(headers)).to.equal(401);
        expectApiError(response, 401);
      }
    });

    it('answers 401 to a bearer token without the cookie', async function () {
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, token: member.jwt }), 401);
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, token: owner.token }), 401);
    });

    it('answers 404 tenant_not_found to the cookie of a user of the database who is not a member', async function () {
      const outsider = await createUser(p, owner.token, `${owner.D}/tenants/${other.id}`);
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: cookie(outsider.session) }), 404, 'tenant_not_found');
    });

    it('answers 404 tenant_not_found for an unknown tenant', async function () {
      const path = `/v2/databases/${owner.database.id}/tenants/${randomUUID()}/users`;
      expectApiError(await p.request('POST', path, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) }), 404, 'tenant_not_found');
    });

    it('answers 401 to the cookie of a session that was signed out', async function () {
      const session = await loginUser(p, T, member);
      expect((await p.request('POST', `${owner.D}/users/logout`, { token: session.jwt })).status).to.equal(204);
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: cookie(session.session) }), 401);
      // The member's other session is unaffected.
      expect((await p.request('GET', `${owner.D}/users/me`, { token: member.jwt })).status).to.equal(200);
    });

    it('answers 404 tenant_not_found to the still-live cookie of a former member', async function () {
      const leaving = await createUser(p, owner.token, T);
      expect((await p.request('DELETE', `${T}/users/${leaving.id}/link`, { token: owner.token })).status).to.equal(204);
      before = await memberIds();
      expectApiError(await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: cookie(leaving.session) }), 404, 'tenant_not_found');
    });

    for (const [what, headers] of [
      ['an Origin from another site', { origin: 'http://evil.example' }],
      ['an Origin of the API on another port', { origin: `${TEST_AUDIENCE}:8080` }],
      ['an Origin of the API over https', { origin: TEST_AUDIENCE.replace('http:', 'https:') }],
      ['a null Origin', { origin: 'null' }],
      ['a Referer from another site', { referer: 'http://evil.example/page' }],
      ['a malformed Referer', { referer: 'not a url' }],
      ['a foreign Origin with the API’s own Referer', { origin: 'http://evil.example', referer: `${TEST_AUDIENCE}/page` }],
    ] as [string, Record<string, string>][]) {
      it(`answers 403 cross_site_request for ${what}, even with a member’s cookie`, async function () {
        const response = await v2('POST', V2, { json: { email, password: TEST_PASSWORD }, headers: { ...headers, ...cookie(member.session) } });
        expectApiError(response, 403, 'cross_site_request');
      });
    }

    const badBodies: [string, (email: string) => unknown, string][] = [
      ['a 7-character password', (email) => ({ email, password: 'short12' }), 'invalid_password'],
      ['a 257-character password', (email) => ({ email, password: 'p'.repeat(257) }), 'validation_failed'],
      ['a missing password', (email) => ({ email }), 'validation_failed'],
      ['a malformed email', () => ({ email: 'nope', password: TEST_PASSWORD }), 'validation_failed'],
      ['an unknown field', (email) => ({ email, password: TEST_PASSWORD, tenantId: randomUUID() }), 'validation_failed'],
      ['a null givenName', (email) => ({ email, password: TEST_PASSWORD, givenName: null }), 'validation_failed'],
      ['a 2049-character picture', (email) => ({ email, password: TEST_PASSWORD, picture: 'p'.repeat(2049) }), 'validation_failed'],
      // Issue 11, finding 6: other people's browsers show the picture.
      ['a javascript: picture', (email) => ({ email, password: TEST_PASSWORD, picture: 'javascript:alert(1)' }), 'validation_failed'],
      ['an http: picture', (email) => ({ email, password: TEST_PASSWORD, picture: 'http://example.test/p.png' }), 'validation_failed'],
      ['a data: picture', (email) => ({ email, password: TEST_PASSWORD, picture: 'data:image/png;base64,AAAA' }), 'validation_failed'],
    ];
    for (const [what, body, code] of badBodies) {
      it(`answers 400 ${code} for ${what}`, async function () {
        expectApiError(await v2('POST', V2, { json: body(email), headers: cookie(member.session) }), 400, code);
      });
    }

    it('answers 400 validation_failed for a database or tenant id that is not a UUID', async function () {
      for (const path of [`/v2/databases/${owner.databaseName}/tenants/${tenant.id}/users`, `/v2/databases/${owner.database.id}/tenants/nope/users`]) {
        expectApiError(await p.request('POST', path, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) }), 400, 'validation_failed');
      }
    });

    it('answers 401 for an unknown database id', async function () {
      const path = `/v2/databases/${randomUUID()}/tenants/${tenant.id}/users`;
      expectApiError(await p.request('POST', path, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) }), 401);
    });

    it('answers 401 for another database’s id, with this database’s cookie', async function () {
      const elsewhere = await developerWithReadyDatabase(p);
      const theirs = await createTenant(p, elsewhere.token, elsewhere.D);
      const path = `/v2/databases/${elsewhere.database.id}/tenants/${theirs.id}/users`;
      expectApiError(await p.request('POST', path, { json: { email, password: TEST_PASSWORD }, headers: cookie(member.session) }), 401);
      // Nobody was created there either.
      await createUser(p, elsewhere.token, `${elsewhere.D}/tenants/${theirs.id}`, { email });
      expect((await p.request('GET', `${elsewhere.D}/tenants/${theirs.id}/users`, { token: elsewhere.token })).body).to.have.length(1);
    });
  });
});
