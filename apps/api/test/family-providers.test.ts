import { expect } from 'chai';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';
import { createTenant, developerWithReadyDatabase } from './support/fixtures.js';
import { onApi, registerProvider, startSsoPlatform, type SsoPlatform } from './support/sso.js';

/**
 * GET /v2/databases/{id}/auth/providers: credentials, and the enabled OIDC providers of the tenant
 * the SDK names (`nile.tenant-id` header), whose sign-in is the SSO flow on the family surface.
 */
describe('the API family’s /auth/providers and the tenant’s single sign-on', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let sso: SsoPlatform;

  before(async function () {
    p = await platform();
    sso = await startSsoPlatform(p);
  });

  after(async function () {
    await sso?.close();
  });

  it('lists credentials, and the tenant’s enabled providers with their SSO login as signinUrl', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, owner.token, owner.D);
    const other = await createTenant(p, owner.token, owner.D);
    const T = `${owner.D}/tenants/${tenant.id}`;
    await registerProvider(sso, owner.token, T, {}, 'corp');
    await registerProvider(sso, owner.token, T, { enabled: false }, 'off');
    await registerProvider(sso, owner.token, `${owner.D}/tenants/${other.id}`, {}, 'elsewhere');

    const base = `/v2/databases/${owner.database.id}`;
    const credentials = {
      id: 'credentials',
      name: 'Credentials',
      type: 'credentials',
      signinUrl: `${TEST_AUDIENCE}${base}/auth/signin/credentials`,
      callbackUrl: `${TEST_AUDIENCE}${base}/auth/callback/credentials`,
    };
    const plain = await sso.request('GET', `${base}/auth/providers`);
    expect(plain.status, plain.text).to.equal(200);
    expect(plain.body).to.deep.equal({ credentials });

    const forTenant = await sso.request('GET', `${base}/auth/providers`, { headers: { 'nile.tenant-id': tenant.id } });
    expect(forTenant.body).to.deep.equal({
      credentials,
      corp: {
        id: 'corp',
        name: 'corp',
        type: 'oidc',
        signinUrl: `${TEST_AUDIENCE}${base}/auth/signin/corp`,
        callbackUrl: `${TEST_AUDIENCE}${base}/auth/callback/corp`,
      },
    });
    // Its signinUrl is the family's sign-in form (family-sso.test.ts): without the CSRF double submit, 403.
    const signin = await fetch(onApi(sso.api, forTenant.body.corp.signinUrl), { method: 'POST', headers: { 'nile.tenant-id': tenant.id, 'content-type': 'application/json' }, body: '{}' });
    expect(signin.status).to.equal(403);
    expect(await signin.json()).to.include({ errorCode: 'csrf_failed' });

    // A tenant id that is no tenant, or not an id: credentials only.
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      expect((await sso.request('GET', `${base}/auth/providers`, { headers: { 'nile.tenant-id': id } })).body).to.deep.equal({ credentials });
    }
  });
});
