import { expect } from 'chai';
import { httpClient } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, createTenant, createUser, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

const SECURE_API_URL = 'https://api.secure.test';

describe('the session cookie when {api_url} is https', function () {
  let p: TestPlatform;
  let api: RunningApi;
  let request: ReturnType<typeof httpClient>;

  before(async function () {
    p = await platform();
    // TLS ends at a proxy in front of the API: the public URL says https, the socket is plain.
    // The v2 route reads the cookie where members create users.
    api = await startApi(loadApiConfig({ ...p.env, PUBLIC_API_URL: SECURE_API_URL, PASSWORD_HASH_LOGN: '10', TENANT_MEMBERS_CREATE_USERS: 'true' }));
    request = httpClient(api.url);
  });

  after(async function () {
    await api?.close();
  });

  it('is named __Secure-auth.session-token, marked Secure, and is what the v2 route reads', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, owner.token, owner.D);
    const T = `${owner.D}/tenants/${tenant.id}`;
    const user = await createUser(p, owner.token, T);

    const signedIn = await request('POST', `${T}/users/login`, { json: { email: user.email, password: user.password } });
    expect(signedIn.status, signedIn.text).to.equal(200);
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    expect(cookie).to.match(/^__Secure-auth\.session-token=[A-Za-z0-9_-]{43}; /);
    expect(cookie.split('; ')).to.include.members(['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']);
    const session = cookie.split(';')[0].split('=')[1];

    const V2 = `/v2/databases/${owner.database.id}/tenants/${tenant.id}/users`;
    const body = { email: uniqueEmail('secure'), password: TEST_PASSWORD };
    // The unprefixed name is not this deployment's cookie.
    expectApiError(await request('POST', V2, { json: body, headers: { cookie: `auth.session-token=${session}` } }), 401, 'invalid_session');
    const created = await request('POST', V2, {
      json: body,
      headers: { cookie: `__Secure-auth.session-token=${session}`, origin: SECURE_API_URL },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.email).to.equal(body.email);
  });
});
