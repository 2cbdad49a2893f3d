import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { expectApiError } from '@platform/test-fixtures';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, createTenant, createUser, developerWithReadyDatabase, loginUser, uniqueEmail, type TestTenant, type TestUser } from './support/fixtures.js';

interface Operation {
  method: string;
  path: string;
  json?: unknown;
  /** What uB (a user of database A outside TA) must get. */
  asOtherUser: { status: number; errorCode: string };
}

describe('authorization of tenants and users', function () {
  let p: TestPlatform;
  /** Workspace W1, developer dev1, database A. */
  let a: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  /** Workspace W2, developer dev2, database C. */
  let c: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let ta: TestTenant;
  let tb: TestTenant;
  let tc: TestTenant;
  let uA: TestUser;
  let uB: TestUser;
  let uC: TestUser;
  const intruderEmail = uniqueEmail('intruder');

  before(async function () {
    p = await platform();
    a = await developerWithReadyDatabase(p);
    c = await developerWithReadyDatabase(p);
    ta = await createTenant(p, a.token, a.D, { name: 'Tenant A' });
    tb = await createTenant(p, a.token, a.D, { name: 'Tenant B' });
    tc = await createTenant(p, c.token, c.D, { name: 'Tenant C' });
    uA = await createUser(p, a.token, `${a.D}/tenants/${ta.id}`, { name: 'User A' });
    uB = await createUser(p, a.token, `${a.D}/tenants/${tb.id}`, { name: 'User B' });
    uC = await createUser(p, c.token, `${c.D}/tenants/${tc.id}`, { name: 'User C' });
  });

  const tenantNotFound = { status: 404, errorCode: 'tenant_not_found' };
  const userNotFound = { status: 404, errorCode: 'user_not_found' };

  /** Every bearer-authenticated tenant and user operation, aimed at TA and uA in database A. */
  function operations(): Operation[] {
    const D = a.D;
    const T = `${D}/tenants/${ta.id}`;
    return [
      { method: 'GET', path: T, asOtherUser: tenantNotFound },
      { method: 'PUT', path: T, json: { name: 'hijacked' }, asOtherUser: tenantNotFound },
      { method: 'DELETE', path: T, asOtherUser: tenantNotFound },
      { method: 'GET', path: `${T}/users`, asOtherUser: tenantNotFound },
      { method: 'POST', path: `${T}/users`, json: { email: intruderEmail, password: TEST_PASSWORD }, asOtherUser: tenantNotFound },
      { method: 'GET', path: `${T}/users/${uA.id}`, asOtherUser: tenantNotFound },
      { method: 'PUT', path: `${T}/users/${uA.id}/link`, asOtherUser: tenantNotFound },
      { method: 'DELETE', path: `${T}/users/${uA.id}/link`, asOtherUser: tenantNotFound },
      // uB adding themselves to TA.
      { method: 'PUT', path: `${T}/users/${uB.id}/link`, asOtherUser: tenantNotFound },
      { method: 'GET', path: `${D}/users/${uA.id}`, asOtherUser: userNotFound },
      { method: 'PUT', path: `${D}/users/${uA.id}`, json: { name: 'hijacked', picture: 'https://evil.example/x.png' }, asOtherUser: userNotFound },
      { method: 'GET', path: `${D}/users/${uA.id}/tenants`, asOtherUser: userNotFound },
      // Taking TA's id for a tenant of one's own.
      { method: 'POST', path: `${D}/tenants`, json: { name: 'hijacked', id: ta.id }, asOtherUser: { status: 403, errorCode: 'developer_token_required' } },
    ];
  }

  /** Database-level operations whose outcome for uB is not about TA (they may list their own). */
  function databaseOperations(): { method: string; path: string; json?: unknown }[] {
    return [
      { method: 'GET', path: `${a.D}/tenants` },
      { method: 'POST', path: `${a.D}/tenants`, json: { name: 'intruder tenant' } },
      { method: 'GET', path: `${a.D}/users/me` },
      { method: 'POST', path: `${a.D}/users/logout` },
    ];
  }

  async function snapshot() {
    const T = `${a.D}/tenants/${ta.id}`;
    const get = async (path: string) => {
      const response = await p.request('GET', path, { token: a.token });
      expect(response.status, `${path}: ${response.text}`).to.equal(200);
      return response.body;
    };
    return {
      tenants: await get(`${a.D}/tenants`),
      ta: await get(T),
      taMembers: await get(`${T}/users`),
      tbMembers: await get(`${a.D}/tenants/${tb.id}/users`),
      uA: await get(`${a.D}/users/${uA.id}`),
      uATenants: await get(`${a.D}/users/${uA.id}/tenants`),
      cTenants: (await p.request('GET', `${c.D}/tenants`, { token: c.token })).body,
    };
  }

  async function expectUnchanged(before: Awaited<ReturnType<typeof snapshot>>) {
    expect(await snapshot()).to.deep.equal(before);
    expect(before.tenants.map((t: TestTenant) => t.id)).to.deep.equal([ta.id, tb.id]);
    expect(before.ta.name).to.equal('Tenant A');
    expect(before.taMembers.map((u: { id: string }) => u.id)).to.deep.equal([uA.id]);
    expect(before.uA.name).to.equal('User A');
    // No intruder was created: the email is still free, and nobody can sign in with it.
    expectApiError(await p.request('POST', `${a.D}/users/login`, { json: { email: intruderEmail, password: TEST_PASSWORD } }), 401, 'authentication_failed');
    // uA still signs in to TA, with the tenants they had.
    expect((await loginUser(p, `${a.D}/tenants/${ta.id}`, uA)).tenants).to.deep.equal([ta.id]);
  }

  it('answers 401 unauthorized without a token, on every operation, and changes nothing', async function () {
    const before = await snapshot();
    for (const op of [...operations(), ...databaseOperations()]) {
      const response = await p.request(op.method, op.path, { json: op.json });
      expect(response.status, `${op.method} ${op.path}`).to.equal(401);
      expectApiError(response, 401, 'unauthorized');
      expect(response.headers.get('www-authenticate')).to.match(/^Bearer/);
    }
    await expectUnchanged(before);
  });

  it('answers 404 workspace_not_found to a developer of another workspace, on every operation, and changes nothing', async function () {
    const before = await snapshot();
    for (const op of operations()) {
      const response = await p.request(op.method, op.path, { json: op.json, token: c.token });
      expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(404);
      expectApiError(response, 404, 'workspace_not_found');
    }
    for (const op of databaseOperations()) {
      const response = await p.request(op.method, op.path, { json: op.json, token: c.token });
      const expected = op.path.endsWith('/users/me') || op.path.endsWith('/users/logout') ? [403, 'user_token_required'] : [404, 'workspace_not_found'];
      expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(expected[0]);
      expectApiError(response, expected[0] as number, expected[1] as string);
    }
    await expectUnchanged(before);
  });

  it('answers 401 invalid_token to a user of another database, on every operation, and changes nothing', async function () {
    const before = await snapshot();
    for (const op of [...operations(), ...databaseOperations()]) {
      const response = await p.request(op.method, op.path, { json: op.json, token: uC.jwt });
      expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(401);
      expectApiError(response, 401, 'invalid_token');
    }
    await expectUnchanged(before);
    // uC's session was not ended by the logout aimed at database A.
    expect((await p.request('GET', `${c.D}/users/me`, { token: uC.jwt })).status).to.equal(200);
  });

  it('answers a user of the same database outside TA as if TA and uA did not exist, and changes nothing', async function () {
    const before = await snapshot();
    for (const op of operations()) {
      const response = await p.request(op.method, op.path, { json: op.json, token: uB.jwt });
      expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(op.asOtherUser.status);
      expectApiError(response, op.asOtherUser.status, op.asOtherUser.errorCode);
    }
    await expectUnchanged(before);
    // What uB sees of the database: only their own tenant, and themselves.
    const listed = await p.request('GET', `${a.D}/tenants`, { token: uB.jwt });
    expect(listed.body.map((t: TestTenant) => t.id)).to.deep.equal([tb.id]);
    const me = await p.request('GET', `${a.D}/users/me`, { token: uB.jwt });
    expect(me.body).to.include({ id: uB.id });
    expect(me.body.tenants).to.deep.equal([tb.id]);
    // Nor may uB sign in to TA, or create users in it through the cookie route.
    expectApiError(await p.request('POST', `${a.D}/tenants/${ta.id}/users/login`, { json: { email: uB.email, password: uB.password } }), 401, 'authentication_failed');
    const v2 = await p.request('POST', `/v2/databases/${a.database.id}/tenants/${ta.id}/users`, {
      json: { email: intruderEmail, password: TEST_PASSWORD },
      headers: { cookie: `auth.session-token=${uB.session}` },
    });
    expectApiError(v2, 404, 'tenant_not_found');
    await expectUnchanged(before);
  });

  it('lets the owner and the member do what the others cannot', async function () {
    const T = `${a.D}/tenants/${ta.id}`;
    for (const token of [a.token, uA.jwt]) {
      expect((await p.request('GET', T, { token })).status).to.equal(200);
      expect((await p.request('GET', `${T}/users`, { token })).status).to.equal(200);
      expect((await p.request('GET', `${T}/users/${uA.id}`, { token })).status).to.equal(200);
      expect((await p.request('GET', `${a.D}/users/${uA.id}`, { token })).status).to.equal(200);
      expect((await p.request('GET', `${a.D}/users/${uA.id}/tenants`, { token })).status).to.equal(200);
    }
  });

  it('refuses a user token on every workspace and database management route with 403 developer_token_required', async function () {
    const W = `/workspaces/${a.slug}`;
    const operationsOfDevelopers = [
      { method: 'GET', path: '/workspaces' },
      { method: 'POST', path: '/workspaces', json: { name: 'User workspace' } },
      { method: 'GET', path: W },
      { method: 'GET', path: `${W}/regions` },
      { method: 'GET', path: `${W}/databases` },
      { method: 'POST', path: `${W}/databases`, json: { databaseName: 'by_a_user', region: 'AWS_US_WEST_2' } },
      { method: 'GET', path: a.D },
      { method: 'PUT', path: a.D, json: { name: 'renamed_by_user' } },
      { method: 'DELETE', path: a.D },
    ];
    for (const token of [uA.jwt, uB.jwt, uC.jwt]) {
      for (const op of operationsOfDevelopers) {
        const response = await p.request(op.method, op.path, { json: op.json, token });
        expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(403);
        expectApiError(response, 403, 'developer_token_required');
      }
    }
    const databases = await p.request('GET', `${W}/databases`, { token: a.token });
    expect(databases.body.map((d: { name: string; status: string }) => [d.name, d.status])).to.deep.equal([[a.databaseName, 'READY']]);
    expect((await p.request('GET', '/workspaces', { token: a.token })).body.map((w: { slug: string }) => w.slug)).to.deep.equal([a.slug]);
    expect((await p.request('GET', `${a.D}/tenants`, { token: uA.jwt })).status).to.equal(200);
  });

  it('answers 401 invalid_token to a token of database A on database C’s paths', async function () {
    const before = (await p.request('GET', `${c.D}/tenants/${tc.id}/users`, { token: c.token })).body;
    const T = `${c.D}/tenants/${tc.id}`;
    for (const op of [
      { method: 'GET', path: `${c.D}/tenants` },
      { method: 'POST', path: `${c.D}/tenants`, json: { name: 'from A' } },
      { method: 'GET', path: T },
      { method: 'PUT', path: T, json: { name: 'from A' } },
      { method: 'DELETE', path: T },
      { method: 'GET', path: `${T}/users` },
      { method: 'POST', path: `${T}/users`, json: { email: intruderEmail, password: TEST_PASSWORD } },
      { method: 'GET', path: `${T}/users/${uC.id}` },
      { method: 'PUT', path: `${T}/users/${uA.id}/link` },
      { method: 'DELETE', path: `${T}/users/${uC.id}/link` },
      { method: 'GET', path: `${c.D}/users/${uC.id}` },
      { method: 'PUT', path: `${c.D}/users/${uC.id}`, json: { name: 'from A' } },
      { method: 'GET', path: `${c.D}/users/${uC.id}/tenants` },
      { method: 'GET', path: `${c.D}/users/me` },
      { method: 'POST', path: `${c.D}/users/logout` },
      // The same database name in a workspace that does not exist.
      { method: 'GET', path: `/workspaces/no-such-workspace/databases/${a.databaseName}/tenants` },
    ]) {
      const response = await p.request(op.method, op.path, { json: op.json, token: uA.jwt });
      expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(401);
      expectApiError(response, 401, 'invalid_token');
    }
    expect((await p.request('GET', `${c.D}/tenants/${tc.id}/users`, { token: c.token })).body).to.deep.equal(before);
    expect((await p.request('GET', `${c.D}/tenants/${tc.id}`, { token: c.token })).body).to.deep.equal(tc);
    expect((await p.request('GET', `${a.D}/users/me`, { token: uA.jwt })).status).to.equal(200);
  });

  describe('membership is checked on every request', function () {
    it('makes a removed member’s next request 404 at once, and a re-added one’s 200', async function () {
      const T = `${a.D}/tenants/${ta.id}`;
      const member = await createUser(p, a.token, T);
      // Warm whatever could cache: the token, the database, the membership.
      for (let i = 0; i < 3; i++) expect((await p.request('GET', `${T}/users`, { token: member.jwt })).status).to.equal(200);

      expect((await p.request('DELETE', `${T}/users/${member.id}/link`, { token: a.token })).status).to.equal(204);
      expectApiError(await p.request('GET', `${T}/users`, { token: member.jwt }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', T, { token: member.jwt }), 404, 'tenant_not_found');
      expectApiError(await p.request('PUT', T, { token: member.jwt, json: { name: 'after removal' } }), 404, 'tenant_not_found');
      expectApiError(await p.request('POST', `${T}/users`, { token: member.jwt, json: { email: intruderEmail, password: TEST_PASSWORD } }), 404, 'tenant_not_found');
      expectApiError(await p.request('PUT', `${T}/users/${member.id}/link`, { token: member.jwt }), 404, 'tenant_not_found');
      expect((await p.request('GET', T, { token: a.token })).body.name).to.equal('Tenant A');

      expect((await p.request('PUT', `${T}/users/${member.id}/link`, { token: a.token })).status).to.equal(200);
      expect((await p.request('GET', `${T}/users`, { token: member.jwt })).status).to.equal(200);
      expect((await p.request('DELETE', `${T}/users/${member.id}/link`, { token: a.token })).status).to.equal(204);
    });

    it('ends a signed-out member’s access to the tenant at once', async function () {
      const T = `${a.D}/tenants/${ta.id}`;
      const member = await createUser(p, a.token, T);
      expect((await p.request('GET', T, { token: member.jwt })).status).to.equal(200);
      expect((await p.request('POST', `${a.D}/users/logout`, { token: member.jwt })).status).to.equal(204);
      for (const op of [
        { method: 'GET', path: T },
        { method: 'PUT', path: T, json: { name: 'signed out' } },
        { method: 'GET', path: `${T}/users` },
        { method: 'POST', path: `${T}/users`, json: { email: intruderEmail, password: TEST_PASSWORD } },
        { method: 'PUT', path: `${T}/users/${uB.id}/link` },
        { method: 'DELETE', path: `${T}/users/${uA.id}/link` },
        { method: 'POST', path: `${a.D}/tenants`, json: { name: 'signed out' } },
      ]) {
        const response = await p.request(op.method, op.path, { json: op.json, token: member.jwt });
        expect(response.status, `${op.method} ${op.path}: ${response.text}`).to.equal(401);
        expectApiError(response, 401, 'invalid_token');
      }
      expect((await p.request('GET', `${T}/users`, { token: a.token })).body.map((u: { id: string }) => u.id)).to.deep.equal([uA.id, member.id]);
      expect((await p.request('DELETE', `${T}/users/${member.id}/link`, { token: a.token })).status).to.equal(204);
    });

    it('finds neither TA nor uA under database C', async function () {
      // TA's id under database C: not a tenant there, for C's own developer and user alike.
      expectApiError(await p.request('GET', `${c.D}/tenants/${ta.id}`, { token: c.token }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', `${c.D}/tenants/${ta.id}/users`, { token: uC.jwt }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', `${c.D}/users/${uA.id}`, { token: c.token }), 404, 'user_not_found');
      expectApiError(await p.request('PUT', `${c.D}/tenants/${tc.id}/users/${uA.id}/link`, { token: c.token }), 404, 'user_not_found');
      expectApiError(await p.request('PUT', `${c.D}/tenants/${randomUUID()}/users/${uC.id}/link`, { token: c.token }), 404, 'tenant_not_found');
    });
  });
});
