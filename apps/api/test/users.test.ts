import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { expectApiError } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, createTenant, createUser, developerWithReadyDatabase, loginUser, sessionCookieOf, uniqueEmail, type TestTenant, type TestUser } from './support/fixtures.js';

const USER_KEYS = ['id', 'email', 'name', 'givenName', 'familyName', 'picture', 'created', 'emailVerified', 'updated'];
const SESSION_COOKIE = /^auth\.session-token=([A-Za-z0-9_-]{20,}); Path=\/; HttpOnly; SameSite=Lax; Max-Age=(\d+)$/;

describe('users', function () {
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let t1: TestTenant;
  let t2: TestTenant;
  let T1: string;
  let T2: string;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    t1 = await createTenant(p, owner.token, owner.D, { name: 'Tenant one' });
    t2 = await createTenant(p, owner.token, owner.D, { name: 'Tenant two' });
    T1 = `${owner.D}/tenants/${t1.id}`;
    T2 = `${owner.D}/tenants/${t2.id}`;
  });

  async function memberIds(T: string): Promise<string[]> {
    const listed = await p.request('GET', `${T}/users`, { token: owner.token });
    expect(listed.status, listed.text).to.equal(200);
    return listed.body.map((user: { id: string }) => user.id);
  }

  async function profile(userId: string) {
    const found = await p.request('GET', `${owner.D}/users/${userId}`, { token: owner.token });
    expect(found.status, found.text).to.equal(200);
    return found.body;
  }

  async function expectLoginFails(path: string, email: string, password = TEST_PASSWORD) {
    const response = await p.request('POST', `${path}/users/login`, { json: { email, password } });
    expectApiError(response, 401, 'authentication_failed');
    expect(response.headers.getSetCookie()).to.deep.equal([]);
    return response;
  }

  describe('POST T/users', function () {
    it('answers 201 LoginUserResponse and sets the session cookie', async function () {
      const email = uniqueEmail();
      const created = await p.request('POST', `${T1}/users`, { token: owner.token, json: { email, password: TEST_PASSWORD, name: 'Ada Lovelace' } });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.have.all.keys('id', 'tenants', 'token');
      expect(created.body.tenants).to.deep.equal([t1.id]);
      expect(created.body.token).to.have.all.keys('jwt', 'maxAge', 'type');
      expect(created.body.token).to.include({ maxAge: 3600, type: 'ACCESS_TOKEN' });
      expect(created.headers.get('cache-control')).to.equal('no-store');

      const cookies = created.headers.getSetCookie();
      expect(cookies).to.have.length(1);
      const match = SESSION_COOKIE.exec(cookies[0]);
      expect(match, cookies[0]).not.to.equal(null);
      expect(Number(match?.[2])).to.be.greaterThan(0);
      expect(cookies[0]).not.to.match(/Secure/i);
      expect(cookies[0]).not.to.include(created.body.token.jwt);

      const user = await profile(created.body.id);
      expect(user).to.have.all.keys(...USER_KEYS);
      expect(user).to.include({ id: created.body.id, email, name: 'Ada Lovelace', givenName: null, familyName: null, picture: null, emailVerified: null });
      expect(await memberIds(T1)).to.include(created.body.id);
    });

    it('issues a real ES256 access token for the user and this database, valid for 3600 s', async function () {
      const created = await p.request('POST', `${T1}/users`, { token: owner.token, json: { email: uniqueEmail(), password: TEST_PASSWORD } });
      expect(created.status, created.text).to.equal(201);
      const { jwt } = created.body.token;
      const header = decodeProtectedHeader(jwt);
      expect(header).to.include({ alg: 'ES256', typ: 'at+jwt' });
      expect(header.kid).to.be.a('string');
      const claims = decodeJwt(jwt);
      expect(claims.sub).to.equal(created.body.id);
      expect((claims.exp as number) - (claims.iat as number)).to.equal(3600);
      expect(claims).to.include({ iss: TEST_ISSUER, kind: 'user', db: owner.database.id });
      expect([claims.aud].flat()).to.include(TEST_AUDIENCE);
      const verified = await jwtVerify(jwt, createLocalJWKSet(await p.controlPlane.keys.publicJwks()), {
        algorithms: ['ES256'],
        issuer: TEST_ISSUER,
        audience: TEST_AUDIENCE,
      });
      expect(verified.payload.sub).to.equal(created.body.id);
      // And the API takes it as a bearer token.
      const me = await p.request('GET', `${owner.D}/users/me`, { token: jwt });
      expect(me.status, me.text).to.equal(200);
      expect(me.body.id).to.equal(created.body.id);
    });

    it('answers a member 403 with the same body whether the email is free, theirs or taken in another tenant, and creates nothing (issue 11, finding 5)', async function () {
      const member = await createUser(p, owner.token, T1);
      const colleague = await createUser(p, owner.token, T1);
      const elsewhere = await createUser(p, owner.token, T2);
      const free = uniqueEmail('free');
      const members1 = await memberIds(T1);
      const bodies = new Set<string>();
      for (const email of [free, colleague.email, elsewhere.email, elsewhere.email.toUpperCase()]) {
        const refused = await p.request('POST', `${T1}/users`, { token: member.jwt, json: { email, password: 'a new password' } });
        expectApiError(refused, 403, 'developer_token_required');
        expect(refused.headers.getSetCookie()).to.deep.equal([]);
        bodies.add(refused.text);
      }
      expect(bodies.size).to.equal(1);
      expect(await memberIds(T1)).to.deep.equal(members1);
      // The free email is still free: a developer creates it.
      expect((await createUser(p, owner.token, T1, { email: free })).email).to.equal(free);
    });

    it('lets a developer attach an existing account of another tenant, which a create refuses with 409', async function () {
      const elsewhere = await createUser(p, owner.token, T2);
      expectApiError(await p.request('POST', `${T1}/users`, { token: owner.token, json: { email: elsewhere.email, password: 'a new password' } }), 409, 'email_taken');
      const linked = await p.request('PUT', `${T1}/users/${elsewhere.id}/link`, { token: owner.token });
      expect(linked.status, linked.text).to.equal(200);
      expect(await memberIds(T1)).to.include(elsewhere.id);
      expect((await p.request('GET', `${owner.D}/users/${elsewhere.id}/tenants`, { token: owner.token })).body.map((t: TestTenant) => t.id)).to.have.members([t1.id, t2.id]);
    });

    it('answers 409 email_taken for an email in use in the database, whatever its case or tenant, and creates nothing', async function () {
      const email = uniqueEmail('Taken');
      const first = await createUser(p, owner.token, T1, { email });
      const members1 = await memberIds(T1);
      const members2 = await memberIds(T2);
      for (const [T, again] of [
        [T1, email],
        [T1, email.toUpperCase()],
        [T1, email.toLowerCase()],
        [T2, email],
      ]) {
        expectApiError(await p.request('POST', `${T}/users`, { token: owner.token, json: { email: again, password: 'another password' } }), 409, 'email_taken');
      }
      expect(await memberIds(T1)).to.deep.equal(members1);
      expect(await memberIds(T2)).to.deep.equal(members2);
      // The first user's password still holds.
      expect((await loginUser(p, owner.D, { email, password: TEST_PASSWORD })).id).to.equal(first.id);
      await expectLoginFails(owner.D, email, 'another password');
    });

    it('allows the same email in another database', async function () {
      const email = uniqueEmail();
      await createUser(p, owner.token, T1, { email });
      const other = await developerWithReadyDatabase(p);
      const tenant = await createTenant(p, other.token, other.D);
      const elsewhere = await createUser(p, other.token, `${other.D}/tenants/${tenant.id}`, { email, password: 'a different password' });
      expect((await loginUser(p, other.D, { email, password: 'a different password' })).id).to.equal(elsewhere.id);
      await expectLoginFails(owner.D, email, 'a different password');
    });

    it('accepts passwords of 8 and of 256 characters', async function () {
      for (const password of ['12345678', 'p'.repeat(256)]) {
        const user = await createUser(p, owner.token, T1, { password });
        expect((await loginUser(p, T1, { email: user.email, password })).id).to.equal(user.id);
      }
    });

    const badBodies: [string, (email: string) => unknown, string][] = [
      ['a 7-character password', (email) => ({ email, password: '1234567' }), 'invalid_password'],
      ['an empty password', (email) => ({ email, password: '' }), 'validation_failed'],
      ['a 257-character password', (email) => ({ email, password: 'p'.repeat(257) }), 'validation_failed'],
      ['a huge password', (email) => ({ email, password: 'p'.repeat(60_000) }), 'validation_failed'],
      ['a missing password', (email) => ({ email }), 'validation_failed'],
      ['a numeric password', (email) => ({ email, password: 12345678 }), 'validation_failed'],
      ['a missing email', () => ({ password: TEST_PASSWORD }), 'validation_failed'],
      ['an email without @', () => ({ email: 'nobody.example.test', password: TEST_PASSWORD }), 'validation_failed'],
      ['an email with nothing before @', () => ({ email: '@example.test', password: TEST_PASSWORD }), 'validation_failed'],
      ['an email with a space', () => ({ email: 'a b@example.test', password: TEST_PASSWORD }), 'validation_failed'],
      ['an empty email', () => ({ email: '', password: TEST_PASSWORD }), 'validation_failed'],
      ['a 321-character email', () => ({ email: `${'e'.repeat(308)}@example.test`, password: TEST_PASSWORD }), 'validation_failed'],
      ['a name of 256 characters', (email) => ({ email, password: TEST_PASSWORD, name: 'n'.repeat(256) }), 'validation_failed'],
      ['a null name', (email) => ({ email, password: TEST_PASSWORD, name: null }), 'validation_failed'],
      ['givenName (not in the basic request)', (email) => ({ email, password: TEST_PASSWORD, givenName: 'Ada' }), 'validation_failed'],
      ['an unknown field', (email) => ({ email, password: TEST_PASSWORD, role: 'admin' }), 'validation_failed'],
      ['an array', (email) => [{ email, password: TEST_PASSWORD }], 'validation_failed'],
    ];
    for (const [what, body, code] of badBodies) {
      it(`refuses ${what} with 400 ${code} and creates nothing`, async function () {
        const email = uniqueEmail();
        const before = await memberIds(T1);
        const response = await p.request('POST', `${T1}/users`, { token: owner.token, json: body(email) });
        expectApiError(response, 400, code);
        expect(response.headers.getSetCookie()).to.deep.equal([]);
        expect(await memberIds(T1)).to.deep.equal(before);
        // Nor does a user with that email exist: it is still free.
        await createUser(p, owner.token, T2, { email });
      });
    }

    it('answers 404 tenant_not_found for an unknown or deleted tenant, and creates nobody', async function () {
      const email = uniqueEmail();
      expectApiError(await p.request('POST', `${owner.D}/tenants/${randomUUID()}/users`, { token: owner.token, json: { email, password: TEST_PASSWORD } }), 404, 'tenant_not_found');
      const doomed = await createTenant(p, owner.token, owner.D);
      expect((await p.request('DELETE', `${owner.D}/tenants/${doomed.id}`, { token: owner.token })).status).to.equal(204);
      expectApiError(await p.request('POST', `${owner.D}/tenants/${doomed.id}/users`, { token: owner.token, json: { email, password: TEST_PASSWORD } }), 404, 'tenant_not_found');
      await expectLoginFails(owner.D, email);
      await createUser(p, owner.token, T1, { email });
    });
  });

  describe('GET T/users and GET T/users/{userId}', function () {
    it('lists the tenant’s members, oldest first, as User objects', async function () {
      const tenant = await createTenant(p, owner.token, owner.D);
      const T = `${owner.D}/tenants/${tenant.id}`;
      const listedEmpty = await p.request('GET', `${T}/users`, { token: owner.token });
      expect(listedEmpty.status).to.equal(200);
      expect(listedEmpty.body).to.deep.equal([]);
      const a = await createUser(p, owner.token, T, { name: 'A' });
      const b = await createUser(p, owner.token, T, { name: 'B' });
      await createUser(p, owner.token, T2);
      const listed = await p.request('GET', `${T}/users`, { token: owner.token });
      expect(listed.body.map((u: { id: string }) => u.id)).to.deep.equal([a.id, b.id]);
      for (const user of listed.body) expect(user).to.have.all.keys(...USER_KEYS);
      expect(listed.body[0]).to.deep.equal(await profile(a.id));
      // A member sees the same list.
      expect((await p.request('GET', `${T}/users`, { token: b.jwt })).body).to.deep.equal(listed.body);
    });

    it('answers a member with 200, and a user of the database outside the tenant with 404 user_not_found', async function () {
      const member = await createUser(p, owner.token, T1);
      const outsider = await createUser(p, owner.token, T2);
      const found = await p.request('GET', `${T1}/users/${member.id}`, { token: owner.token });
      expect(found.status).to.equal(200);
      expect(found.body).to.deep.equal(await profile(member.id));
      expectApiError(await p.request('GET', `${T1}/users/${outsider.id}`, { token: owner.token }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${T1}/users/${outsider.id}`, { token: member.jwt }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${T1}/users/${randomUUID()}`, { token: owner.token }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${T1}/users/not-a-uuid`, { token: owner.token }), 400, 'validation_failed');
    });
  });

  describe('POST T/users/login', function () {
    it('signs a member in: 200 LoginUserResponse, a new session and its cookie', async function () {
      const user = await createUser(p, owner.token, T1);
      const response = await p.request('POST', `${T1}/users/login`, { json: { email: user.email, password: user.password } });
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.have.all.keys('id', 'tenants', 'token');
      expect(response.body).to.deep.include({ id: user.id, tenants: [t1.id] });
      expect(response.body.token).to.include({ maxAge: 3600, type: 'ACCESS_TOKEN' });
      expect(response.body.token.jwt).not.to.equal(user.jwt);
      const cookies = response.headers.getSetCookie();
      expect(cookies).to.have.length(1);
      expect(cookies[0]).to.match(SESSION_COOKIE);
      expect(sessionCookieOf(response)).not.to.equal(user.session);
      expect(decodeJwt(response.body.token.jwt).sub).to.equal(user.id);
      expect((await p.request('GET', T1, { token: response.body.token.jwt })).status).to.equal(200);
    });

    it('matches the email whatever its case', async function () {
      const user = await createUser(p, owner.token, T1, { email: uniqueEmail('MixedCase') });
      expect((await loginUser(p, T1, { email: user.email.toUpperCase(), password: user.password })).id).to.equal(user.id);
      expect((await loginUser(p, T1, { email: user.email.toLowerCase(), password: user.password })).id).to.equal(user.id);
    });

    it('answers 401 authentication_failed, with identical bodies, for a wrong password, an unknown email and a non-member', async function () {
      const member = await createUser(p, owner.token, T1);
      const outsider = await createUser(p, owner.token, T2);
      const wrongPassword = await expectLoginFails(T1, member.email, 'not the password');
      const unknownEmail = await expectLoginFails(T1, uniqueEmail());
      const nonMember = await expectLoginFails(T1, outsider.email, outsider.password);
      const unknownTenant = await expectLoginFails(`${owner.D}/tenants/${randomUUID()}`, member.email, member.password);
      const unknownDatabase = await expectLoginFails(`/workspaces/${owner.slug}/databases/nowhere/tenants/${t1.id}`, member.email, member.password);
      for (const response of [unknownEmail, nonMember, unknownTenant, unknownDatabase]) {
        expect(response.text).to.equal(wrongPassword.text);
        expect(response.headers.get('www-authenticate')).to.equal(wrongPassword.headers.get('www-authenticate'));
      }
      // The outsider can sign in where they belong.
      expect((await loginUser(p, T2, outsider)).tenants).to.deep.equal([t2.id]);
    });

    for (const [what, body] of [
      ['a missing password', { email: 'a@b.c' }],
      ['a missing email', { password: TEST_PASSWORD }],
      ['a 257-character password', { email: 'a@b.c', password: 'p'.repeat(257) }],
      ['an unknown field', { email: 'a@b.c', password: TEST_PASSWORD, remember: true }],
      ['a malformed email', { email: 'not-an-email', password: TEST_PASSWORD }],
    ] as [string, unknown][]) {
      it(`refuses ${what} with 400 validation_failed`, async function () {
        expectApiError(await p.request('POST', `${T1}/users/login`, { json: body }), 400, 'validation_failed');
        expectApiError(await p.request('POST', `${owner.D}/users/login`, { json: body }), 400, 'validation_failed');
      });
    }
  });

  describe('POST D/users/login (database-wide)', function () {
    it('signs a user in with all their tenants, oldest first, or none', async function () {
      const user = await createUser(p, owner.token, T2);
      expect((await p.request('PUT', `${T1}/users/${user.id}/link`, { token: owner.token })).status).to.equal(200);
      const signedIn = await loginUser(p, owner.D, user);
      expect(signedIn.id).to.equal(user.id);
      expect(signedIn.tenants).to.deep.equal([t1.id, t2.id]);
      expect(await p.request('GET', `${owner.D}/tenants`, { token: signedIn.jwt }).then((r) => r.body.map((t: TestTenant) => t.id))).to.deep.equal([t1.id, t2.id]);

      for (const T of [T1, T2]) expect((await p.request('DELETE', `${T}/users/${user.id}/link`, { token: owner.token })).status).to.equal(204);
      const alone = await loginUser(p, owner.D, user);
      expect(alone.tenants).to.deep.equal([]);
    });

    it('answers 401 authentication_failed for a wrong password, an unknown email and an unknown database alike', async function () {
      const user = await createUser(p, owner.token, T1);
      const wrong = await expectLoginFails(owner.D, user.email, 'wrong password!');
      for (const response of [
        await expectLoginFails(owner.D, uniqueEmail()),
        await expectLoginFails(`/workspaces/${owner.slug}/databases/missing_db`, user.email, user.password),
        await expectLoginFails(`/workspaces/no-such-workspace/databases/${owner.databaseName}`, user.email, user.password),
      ]) {
        expect(response.text).to.equal(wrong.text);
      }
    });
  });

  describe('GET D/users/{userId}', function () {
    it('shows a developer any user, and a user themselves and those they share a tenant with', async function () {
      const a = await createUser(p, owner.token, T1);
      const b = await createUser(p, owner.token, T1);
      const c = await createUser(p, owner.token, T2);
      const found = await p.request('GET', `${owner.D}/users/${c.id}`, { token: owner.token });
      expect(found.status).to.equal(200);
      expect(found.body).to.have.all.keys(...USER_KEYS);
      expect(found.body).to.include({ id: c.id, email: c.email });
      expect((await p.request('GET', `${owner.D}/users/${a.id}`, { token: a.jwt })).body.id).to.equal(a.id);
      expect((await p.request('GET', `${owner.D}/users/${b.id}`, { token: a.jwt })).body.id).to.equal(b.id);
      expectApiError(await p.request('GET', `${owner.D}/users/${c.id}`, { token: a.jwt }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${owner.D}/users/${randomUUID()}`, { token: owner.token }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${owner.D}/users/not-a-uuid`, { token: owner.token }), 400, 'validation_failed');
    });
  });

  describe('PUT D/users/{userId}', function () {
    let user: TestUser;
    beforeEach(async function () {
      user = await createUser(p, owner.token, T1, { name: 'Original' });
    });

    it('sets the given fields, keeps the omitted ones, and clears those set to null', async function () {
      const before = await profile(user.id);
      const all = { name: 'Grace Hopper', givenName: 'Grace', familyName: 'Hopper', picture: 'https://example.test/grace.png' };
      const updated = await p.request('PUT', `${owner.D}/users/${user.id}`, { token: owner.token, json: all });
      expect(updated.status, updated.text).to.equal(200);
      expect(updated.body).to.have.all.keys(...USER_KEYS);
      expect(updated.body).to.include({ ...all, id: user.id, email: user.email, created: before.created });
      expect(Date.parse(updated.body.updated)).to.be.at.least(Date.parse(before.updated));
      expect(await profile(user.id)).to.deep.equal(updated.body);

      const partial = await p.request('PUT', `${owner.D}/users/${user.id}`, { token: owner.token, json: { givenName: 'Amazing' } });
      expect(partial.status).to.equal(200);
      expect(partial.body).to.include({ ...all, givenName: 'Amazing' });

      const cleared = await p.request('PUT', `${owner.D}/users/${user.id}`, { token: owner.token, json: { name: null, picture: null } });
      expect(cleared.status).to.equal(200);
      expect(cleared.body).to.include({ name: null, givenName: 'Amazing', familyName: 'Hopper', picture: null, email: user.email });

      const empty = await p.request('PUT', `${owner.D}/users/${user.id}`, { token: owner.token, json: {} });
      expect(empty.status).to.equal(200);
      expect(empty.body).to.include({ name: null, givenName: 'Amazing', familyName: 'Hopper', picture: null });
      expect(await profile(user.id)).to.deep.equal(empty.body);
    });

    it('lets a user update themselves, and refuses another user they can see with 403 not_your_profile', async function () {
      const self = await p.request('PUT', `${owner.D}/users/${user.id}`, { token: user.jwt, json: { familyName: 'Self' } });
      expect(self.status, self.text).to.equal(200);
      expect(self.body.familyName).to.equal('Self');
      const neighbour = await createUser(p, owner.token, T1, { name: 'Neighbour' });
      const before = await profile(neighbour.id);
      expectApiError(await p.request('PUT', `${owner.D}/users/${neighbour.id}`, { token: user.jwt, json: { name: 'Hijacked' } }), 403, 'not_your_profile');
      expect(await profile(neighbour.id)).to.deep.equal(before);
      const stranger = await createUser(p, owner.token, T2);
      expectApiError(await p.request('PUT', `${owner.D}/users/${stranger.id}`, { token: user.jwt, json: { name: 'Hijacked' } }), 404, 'user_not_found');
    });

    for (const [what, body] of [
      ['an email', { email: 'new@example.test' }],
      ['an email with a name', { name: 'ok', email: 'new@example.test' }],
      ['a password', { password: 'new password 123' }],
      ['an unknown field', { nickname: 'x' }],
      ['an id', { id: randomUUID() }],
      ['a 256-character name', { name: 'n'.repeat(256) }],
      ['a 2049-character picture', { picture: `https://example.test/${'p'.repeat(2029)}` }],
      ['a javascript: picture (issue 11, finding 6)', { picture: 'javascript:alert(1)' }],
      ['a numeric name', { name: 1 }],
      ['a boolean givenName', { givenName: true }],
      ['an array', [{ name: 'x' }]],
    ] as [string, unknown][]) {
      it(`refuses ${what} with 400 validation_failed and changes nothing`, async function () {
        const before = await profile(user.id);
        expectApiError(await p.request('PUT', `${owner.D}/users/${user.id}`, { token: owner.token, json: body }), 400, 'validation_failed');
        expect(await profile(user.id)).to.deep.equal(before);
        // The email did not change: the user still signs in with theirs.
        expect((await loginUser(p, owner.D, user)).id).to.equal(user.id);
      });
    }

    it('answers 404 user_not_found for an unknown user', async function () {
      expectApiError(await p.request('PUT', `${owner.D}/users/${randomUUID()}`, { token: owner.token, json: { name: 'x' } }), 404, 'user_not_found');
    });
  });

  describe('GET D/users/me', function () {
    it('answers the signed-in user with their tenants', async function () {
      const user = await createUser(p, owner.token, T1, { name: 'Me' });
      const me = await p.request('GET', `${owner.D}/users/me`, { token: user.jwt });
      expect(me.status, me.text).to.equal(200);
      expect(me.body).to.have.all.keys(...USER_KEYS, 'tenants');
      const { tenants, ...rest } = me.body;
      expect(rest).to.deep.equal(await profile(user.id));
      expect(tenants).to.deep.equal([t1.id]);
      expect((await p.request('PUT', `${T2}/users/${user.id}/link`, { token: owner.token })).status).to.equal(200);
      expect((await p.request('GET', `${owner.D}/users/me`, { token: user.jwt })).body.tenants).to.deep.equal([t1.id, t2.id]);
    });

    it('answers 403 user_token_required to a developer and 401 unauthorized without a token', async function () {
      expectApiError(await p.request('GET', `${owner.D}/users/me`, { token: owner.token }), 403, 'user_token_required');
      expectApiError(await p.request('GET', `${owner.D}/users/me`), 401, 'unauthorized');
    });
  });

  describe('PUT and DELETE T/users/{userId}/link', function () {
    it('links an existing user, who then sees the tenant; unlinking takes it away at once', async function () {
      const user = await createUser(p, owner.token, T2);
      expectApiError(await p.request('GET', T1, { token: user.jwt }), 404, 'tenant_not_found');

      const linked = await p.request('PUT', `${T1}/users/${user.id}/link`, { token: owner.token });
      expect(linked.status, linked.text).to.equal(200);
      expect(linked.body).to.deep.equal(await profile(user.id));
      expect((await p.request('GET', T1, { token: user.jwt })).status).to.equal(200);
      expect((await p.request('GET', `${T1}/users/${user.id}`, { token: owner.token })).status).to.equal(200);
      expect((await p.request('GET', `${owner.D}/tenants`, { token: user.jwt })).body.map((t: TestTenant) => t.id)).to.deep.equal([t1.id, t2.id]);

      // Linking again changes nothing.
      expect((await p.request('PUT', `${T1}/users/${user.id}/link`, { token: owner.token })).status).to.equal(200);
      expect((await memberIds(T1)).filter((id) => id === user.id)).to.have.length(1);

      const unlinked = await p.request('DELETE', `${T1}/users/${user.id}/link`, { token: owner.token });
      expect(unlinked.status).to.equal(204);
      expect(unlinked.text).to.equal('');
      expectApiError(await p.request('GET', T1, { token: user.jwt }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', `${T1}/users`, { token: user.jwt }), 404, 'tenant_not_found');
      expect((await p.request('GET', `${owner.D}/tenants`, { token: user.jwt })).body.map((t: TestTenant) => t.id)).to.deep.equal([t2.id]);
      expect(await memberIds(T1)).not.to.include(user.id);
      await expectLoginFails(T1, user.email, user.password);
    });

    it('answers 404 user_not_found when unlinking a non-member or linking an unknown user', async function () {
      const outsider = await createUser(p, owner.token, T2);
      const before = await memberIds(T1);
      expectApiError(await p.request('DELETE', `${T1}/users/${outsider.id}/link`, { token: owner.token }), 404, 'user_not_found');
      expectApiError(await p.request('DELETE', `${T1}/users/${randomUUID()}/link`, { token: owner.token }), 404, 'user_not_found');
      expectApiError(await p.request('PUT', `${T1}/users/${randomUUID()}/link`, { token: owner.token }), 404, 'user_not_found');
      expect(await memberIds(T1)).to.deep.equal(before);
      expect(await memberIds(T2)).to.include(outsider.id);
    });

    it('lets a member unlink only themselves, and link nobody (they could pull in anyone whose id they know)', async function () {
      const member = await createUser(p, owner.token, T1);
      const colleague = await createUser(p, owner.token, T1);
      const other = await createUser(p, owner.token, T2);
      expectApiError(await p.request('PUT', `${T1}/users/${other.id}/link`, { token: member.jwt }), 403, 'developer_token_required');
      expect(await memberIds(T1)).not.to.include(other.id);
      expectApiError(await p.request('GET', `${owner.D}/users/${other.id}`, { token: member.jwt }), 404, 'user_not_found');
      expectApiError(await p.request('DELETE', `${T1}/users/${colleague.id}/link`, { token: member.jwt }), 403, 'developer_token_required');
      expect(await memberIds(T1)).to.include(colleague.id);
      expect((await p.request('DELETE', `${T1}/users/${member.id}/link`, { token: member.jwt })).status).to.equal(204);
      expect(await memberIds(T1)).not.to.include(member.id);
      expectApiError(await p.request('GET', `${T1}/users`, { token: member.jwt }), 404, 'tenant_not_found');
    });
  });

  describe('ids are case-insensitive', function () {
    it('treats an upper-case tenant or user id as the same id', async function () {
      const user = await createUser(p, owner.token, T1);
      const upperT = `${owner.D}/tenants/${T1.split('/').pop()!.toUpperCase()}`;
      const signedIn = await p.request('POST', `${upperT}/users/login`, { json: { email: user.email, password: user.password } });
      expect(signedIn.status, signedIn.text).to.equal(200);
      const renamed = await p.request('PUT', `${owner.D}/users/${user.id.toUpperCase()}`, { token: user.jwt, json: { name: 'Upper' } });
      expect(renamed.status, renamed.text).to.equal(200);
      expect((await p.request('GET', `${owner.D}/users/${user.id.toUpperCase()}/tenants`, { token: user.jwt })).status).to.equal(200);
    });
  });

  describe('GET D/users/{userId}/tenants', function () {
    it('lists a user’s tenants to a developer and to the user, and hides them from others', async function () {
      const user = await createUser(p, owner.token, T1);
      expect((await p.request('PUT', `${T2}/users/${user.id}/link`, { token: owner.token })).status).to.equal(200);
      const listed = await p.request('GET', `${owner.D}/users/${user.id}/tenants`, { token: owner.token });
      expect(listed.status).to.equal(200);
      expect(listed.body.map((t: TestTenant) => t.id)).to.deep.equal([t1.id, t2.id]);
      expect(listed.body[0]).to.have.all.keys('id', 'name', 'created', 'updated');
      expect((await p.request('GET', `${owner.D}/users/${user.id}/tenants`, { token: user.jwt })).body).to.deep.equal(listed.body);
      const neighbour = await createUser(p, owner.token, T1);
      expectApiError(await p.request('GET', `${owner.D}/users/${user.id}/tenants`, { token: neighbour.jwt }), 404, 'user_not_found');
      expectApiError(await p.request('GET', `${owner.D}/users/${randomUUID()}/tenants`, { token: owner.token }), 404, 'user_not_found');
    });
  });

  describe('POST D/users/logout', function () {
    it('answers 204, clears the cookie, and the session’s token stops working at once', async function () {
      const user = await createUser(p, owner.token, T1);
      const other = await loginUser(p, owner.D, user);
      expect((await p.request('GET', `${owner.D}/tenants`, { token: user.jwt })).status).to.equal(200);

      const out = await p.request('POST', `${owner.D}/users/logout`, { token: user.jwt });
      expect(out.status, out.text).to.equal(204);
      expect(out.text).to.equal('');
      expect(out.headers.getSetCookie()).to.deep.equal(['auth.session-token=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0']);

      for (const [method, path] of [
        ['GET', `${owner.D}/tenants`],
        ['GET', `${owner.D}/users/me`],
        ['GET', T1],
        ['GET', `${T1}/users`],
        ['GET', `${owner.D}/users/${user.id}`],
        ['GET', `${owner.D}/users/${user.id}/tenants`],
      ]) {
        const response = await p.request(method, path, { token: user.jwt });
        expect(response.status, `${method} ${path}`).to.equal(401);
        expectApiError(response, 401, 'invalid_token');
      }
      expectApiError(await p.request('PUT', `${owner.D}/users/${user.id}`, { token: user.jwt, json: { name: 'after logout' } }), 401, 'invalid_token');
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: user.jwt, json: { name: 'after logout' } }), 401, 'invalid_token');
      expect((await profile(user.id)).name).to.equal(null);

      // Another session of the same user is untouched.
      expect((await p.request('GET', `${owner.D}/users/me`, { token: other.jwt })).status).to.equal(200);
    });

    it('answers 403 user_token_required to a developer and 401 unauthorized without a token', async function () {
      expectApiError(await p.request('POST', `${owner.D}/users/logout`, { token: owner.token }), 403, 'user_token_required');
      expectApiError(await p.request('POST', `${owner.D}/users/logout`), 401, 'unauthorized');
    });
  });
});
