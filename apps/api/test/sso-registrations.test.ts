import { expect } from 'chai';
import { freePort, httpClient, query } from '@platform/testing';
import { startApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { createTenant, createUser, developerWithReadyDatabase, expectApiError } from './support/fixtures.js';
import { platform, TEST_SSO_KEYS, type TestPlatform } from './support/platform.js';
import { pageErrorCode, registerProvider, signInWithProvider, startSsoPlatform, type SsoPlatform } from './support/sso.js';

const FIELDS = ['clientId', 'configUrl', 'created', 'emailDomains', 'enabled', 'id', 'jitProvisioning', 'provider', 'redirectURI', 'tenantId', 'updated'];

describe('SSO provider registrations', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let sso: SsoPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let T: string;
  let tenantId: string;

  before(async function () {
    p = await platform();
    sso = await startSsoPlatform(p);
    owner = await developerWithReadyDatabase(p);
    tenantId = (await createTenant(p, owner.token, owner.D)).id;
    T = `${owner.D}/tenants/${tenantId}`;
  });

  after(async function () {
    this.timeout(90_000);
    await sso?.close();
  });

  afterEach(function () {
    sso.op.discoveryOverride = null;
  });

  const sealedSecretOf = async (id: string) =>
    (await query<{ sealed_secret: string }>(p.controlPlane.url, 'select sealed_secret from sso_registrations where id = $1', [id]))[0]?.sealed_secret;

  it('registers a provider, shows it without its secret, and refuses a second of the same name (409)', async function () {
    const registration = await registerProvider(sso, owner.token, T, { emailDomains: ['Corp.TEST', 'corp.test', 'sub.corp.test'] }, 'okta');
    const body = registration.body;
    expect(Object.keys(body).sort()).to.deep.equal(FIELDS);
    expect(body).to.include({ tenantId, provider: 'okta', configUrl: sso.op.configUrl, clientId: registration.clientId, enabled: true, jitProvisioning: true, redirectURI: 'https://app.test/sso' });
    expect(body.emailDomains).to.deep.equal(['corp.test', 'sub.corp.test']);
    const sealed = await sealedSecretOf(body.id as string);
    expect(sealed).to.match(/^v1\.test1\./);
    expect(sealed).not.to.include(registration.clientSecret);

    const again = await sso.request('POST', `${T}/auth/oidc/providers/okta`, {
      token: owner.token,
      json: { configUrl: sso.op.configUrl, clientId: 'x', clientSecret: 'y', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expectApiError(again, 409, 'provider_already_exists');

    const one = await sso.request('GET', `${T}/auth/oidc/providers/okta`, { token: owner.token });
    expect(one.status).to.equal(200);
    expect(one.body).to.deep.equal(body);
    const list = await sso.request('GET', `${T}/auth/oidc/providers`, { token: owner.token });
    expect(list.status).to.equal(200);
    expect(list.body).to.deep.equal([body]);
    for (const answer of [again, one, list]) expect(answer.text).not.to.include(registration.clientSecret);
  });

  it('updates only the fields given, checks discovery again, and seals a new secret', async function () {
    const registration = await registerProvider(sso, owner.token, T, {}, 'updatable');
    const before = await sealedSecretOf(registration.body.id as string);
    const updated = await sso.request('PUT', `${T}/auth/oidc/providers/updatable`, { token: owner.token, json: { enabled: false, clientSecret: 'rotated-secret' } });
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.body).to.deep.include({ ...registration.body, enabled: false, updated: updated.body.updated });
    expect(Date.parse(updated.body.updated)).to.be.greaterThan(Date.parse(registration.body.updated as string));
    const after = await sealedSecretOf(registration.body.id as string);
    expect(after).to.match(/^v1\.test1\./).and.not.equal(before);
    expect(after).not.to.include('rotated-secret');

    // A given configUrl is checked again; without one nothing is fetched, so a provider that is down can still be disabled.
    sso.op.discoveryOverride = (document) => ({ ...document, issuer: 'https://elsewhere.test' });
    const mismatch = await sso.request('PUT', `${T}/auth/oidc/providers/updatable`, { token: owner.token, json: { enabled: true, configUrl: sso.op.configUrl } });
    expectApiError(mismatch, 502, 'provider_mismatch');
    const unchanged = await sso.request('GET', `${T}/auth/oidc/providers/updatable`, { token: owner.token });
    expect(unchanged.body.enabled).to.equal(false);
    const fetched = sso.op.requests.length;
    const whileDown = await sso.request('PUT', `${T}/auth/oidc/providers/updatable`, { token: owner.token, json: { emailDomains: ['other.test'] } });
    expect(whileDown.status, whileDown.text).to.equal(200);
    expect(whileDown.body.emailDomains).to.deep.equal(['other.test']);
    expect(sso.op.requests.length).to.equal(fetched);
    sso.op.discoveryOverride = null;
    // Another configUrl is another provider: its secret must come along, the old one is never sent there.
    const moved = `${sso.op.issuer}/elsewhere/.well-known/openid-configuration`;
    expectApiError(await sso.request('PUT', `${T}/auth/oidc/providers/updatable`, { token: owner.token, json: { configUrl: moved } }), 400, 'client_secret_required');

    expectApiError(await sso.request('PUT', `${T}/auth/oidc/providers/nobody`, { token: owner.token, json: { enabled: true } }), 404, 'unknown_oidc_provider');
  });

  it('deletes a provider (204), after which it is not found', async function () {
    await registerProvider(sso, owner.token, T, {}, 'doomed');
    const deleted = await sso.request('DELETE', `${T}/auth/oidc/providers/doomed`, { token: owner.token });
    expect(deleted.status).to.equal(204);
    expectApiError(await sso.request('GET', `${T}/auth/oidc/providers/doomed`, { token: owner.token }), 404, 'unknown_oidc_provider');
    expectApiError(await sso.request('DELETE', `${T}/auth/oidc/providers/doomed`, { token: owner.token }), 404, 'unknown_oidc_provider');
  });

  it('lists every tenant’s providers for a developer, filtered by provider and by email domain', async function () {
    const db = await developerWithReadyDatabase(p);
    const [a, b] = [await createTenant(p, db.token, db.D), await createTenant(p, db.token, db.D)];
    const first = await registerProvider(sso, db.token, `${db.D}/tenants/${a.id}`, { emailDomains: ['a.test'] }, 'shared');
    const second = await registerProvider(sso, db.token, `${db.D}/tenants/${b.id}`, { emailDomains: ['b.test'] }, 'shared');
    const third = await registerProvider(sso, db.token, `${db.D}/tenants/${b.id}`, { emailDomains: ['b.test', 'a.test'] }, 'other');
    const list = async (query = '') => {
      const answer = await sso.request('GET', `${db.D}/tenants/auth/oidc/providers${query}`, { token: db.token });
      expect(answer.status, answer.text).to.equal(200);
      return (answer.body as { id: string }[]).map((item) => item.id).sort();
    };
    const ids = (...items: { body: Record<string, unknown> }[]) => items.map((item) => item.body.id as string).sort();
    expect(await list()).to.deep.equal(ids(first, second, third));
    expect(await list('?provider=shared')).to.deep.equal(ids(first, second));
    expect(await list('?email=someone%40A.test')).to.deep.equal(ids(first, third));
    expect(await list('?email=someone%40b.test&provider=other')).to.deep.equal(ids(third));
    expect(await list('?email=no-domain')).to.deep.equal([]);
    // Another developer's database does not exist for this one.
    expectApiError(await sso.request('GET', `${db.D}/tenants/auth/oidc/providers`, { token: owner.token }), 404);
  });

  it('refuses invalid registrations with 400 and creates nothing', async function () {
    const valid = { configUrl: sso.op.configUrl, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' };
    const cases: [string, Record<string, unknown>, string][] = [
      ['bad', { ...valid, emailDomains: [] }, 'invalid_email_domains'],
      ['bad', { ...valid, emailDomains: ['not a domain'] }, 'invalid_email_domains'],
      ['bad', { ...valid, emailDomains: Array.from({ length: 51 }, (_, i) => `d${i}.test`) }, 'invalid_email_domains'],
      ['bad', { ...valid, redirectURI: 'http://app.test/sso' }, 'invalid_redirect_uri'],
      ['bad', { ...valid, redirectURI: 'javascript:alert(1)' }, 'invalid_redirect_uri'],
      ['bad', { ...valid, redirectURI: 'https://user:pw@app.test/sso' }, 'invalid_redirect_uri'],
      ['bad', { ...valid, clientSecret: undefined }, 'validation_failed'],
      ['bad', { ...valid, emailDomains: 'corp.test' }, 'validation_failed'],
      ['-leading-dash', valid, 'invalid_provider_name'],
      ['has%20space', valid, 'invalid_provider_name'],
    ];
    for (const [name, body, code] of cases) {
      const answer = await sso.request('POST', `${T}/auth/oidc/providers/${name}`, { token: owner.token, json: body });
      expectApiError(answer, 400, code);
    }
    const list = await sso.request('GET', `${T}/auth/oidc/providers`, { token: owner.token });
    expect((list.body as { provider: string }[]).map((item) => item.provider)).not.to.include.members(['bad', '-leading-dash', 'has space']);
  });

  it('answers 502 when the discovery document names another issuer, lacks an endpoint, or cannot be fetched', async function () {
    const post = (name: string, configUrl = sso.op.configUrl) =>
      sso.request('POST', `${T}/auth/oidc/providers/${name}`, {
        token: owner.token,
        json: { configUrl, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
      });
    sso.op.discoveryOverride = (document) => ({ ...document, issuer: 'https://accounts.example.test' });
    expectApiError(await post('mismatch'), 502, 'provider_mismatch');
    sso.op.discoveryOverride = (document) => ({ ...document, token_endpoint: undefined });
    expectApiError(await post('no-token-endpoint'), 502, 'provider_mismatch');
    sso.op.discoveryOverride = (document) => ({ ...document, token_endpoint: 'http://169.254.169.254/latest/meta-data/token' });
    const inward = await post('inward-token-endpoint');
    expectApiError(inward, 502, 'provider_mismatch');
    expect(inward.body.message).to.include('token_endpoint refused');
    sso.op.discoveryOverride = (document) => ({ ...document, jwks_uri: 'http://10.0.0.1/jwks' });
    expectApiError(await post('inward-jwks'), 502, 'provider_mismatch');
    sso.op.discoveryOverride = null;
    expectApiError(await post('not-found', `${sso.op.issuer}/nothing/.well-known/openid-configuration`), 502);
    expectApiError(await post('closed', 'http://127.0.0.1:9/.well-known/openid-configuration'), 502, 'provider_config_error');
    sso.op.discoveryOverride = (document) => ({ ...document, service_documentation: 'nul\u0000here' });
    expectApiError(await post('nul-text'), 502, 'provider_mismatch');
    sso.op.discoveryOverride = (document) => ({ ...document, op_policy_uri: 'lone \ud800 surrogate' });
    expectApiError(await post('lone-surrogate'), 502, 'provider_mismatch');
    sso.op.discoveryOverride = null;
    expectApiError(await post('bad-redirect', sso.op.redirectUrl('http://[')), 502, 'provider_config_error');
    expectApiError(await sso.request('GET', `${T}/auth/oidc/providers/mismatch`, { token: owner.token }), 404, 'unknown_oidc_provider');
  });

  it('refuses inward configUrls with 400 before fetching anything, on a platform without the development setting', async function () {
    const port = new URL(sso.op.origin).port;
    const fetchedBefore = sso.op.requests.length;
    const inward = [
      'http://169.254.169.254/latest/meta-data/.well-known/openid-configuration',
      'https://169.254.169.254/.well-known/openid-configuration',
      'https://10.1.2.3/.well-known/openid-configuration',
      'https://192.168.1.1/.well-known/openid-configuration',
      'https://[fd00::1]/.well-known/openid-configuration',
      'https://[::ffff:127.0.0.1]/.well-known/openid-configuration',
      `https://localhost:${port}/.well-known/openid-configuration`,
      `http://127.0.0.1:${port}/.well-known/openid-configuration`,
      `https://user:pass@localhost:${port}/.well-known/openid-configuration`,
    ];
    for (const configUrl of inward) {
      const answer = await p.request('POST', `${T}/auth/oidc/providers/inward`, {
        token: owner.token,
        json: { configUrl, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
      });
      expect(answer.status, `${configUrl}: ${answer.text}`).to.equal(400);
      expect(answer.body.errorCode, configUrl).to.equal('invalid_config_url');
    }
    // The refusal says why without naming an address: what a name resolves to is the network's to keep.
    const named = await p.request('POST', `${T}/auth/oidc/providers/inward`, {
      token: owner.token,
      json: { configUrl: `https://localhost:${port}/.well-known/openid-configuration`, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expect(named.status).to.equal(400);
    expect(named.body).to.deep.equal({
      errorCode: 'invalid_config_url',
      message: "configUrl refused: the provider's address is on this machine or a private network",
      statusCode: 400,
    });
    const literal = await p.request('POST', `${T}/auth/oidc/providers/inward`, {
      token: owner.token,
      json: { configUrl: 'https://[fd00::1]/.well-known/openid-configuration', clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expect(literal.body).to.deep.equal(named.body);
    for (const answer of [named, literal]) expect(answer.text).not.to.match(/127\.0\.0\.1|::1|fd00|\d+\.\d+\.\d+\.\d+/);
    expect(sso.op.requests.length, 'requests the provider received').to.equal(fetchedBefore);
  });

  it('refuses a configUrl that redirects inward (400), having fetched only the redirect', async function () {
    const before = sso.op.requests.length;
    const redirect = sso.op.redirectUrl('http://169.254.169.254/latest/meta-data/.well-known/openid-configuration');
    const answer = await sso.request('POST', `${T}/auth/oidc/providers/redirected`, {
      token: owner.token,
      json: { configUrl: redirect, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expect(answer.body).to.deep.equal({
      errorCode: 'invalid_config_url',
      message: 'configUrl refused: the provider redirected to an address on this machine or a private network',
      statusCode: 400,
    });
    expect(sso.op.requests.slice(before).map((line) => line.split('?')[0])).to.deep.equal(['GET /test-redirect']);
  });

  it('lets only developers of the workspace manage a tenant’s providers', async function () {
    await registerProvider(sso, owner.token, T, {}, 'guarded');
    const member = await createUser(p, owner.token, T);
    const otherTenant = await createTenant(p, owner.token, owner.D);
    const outsider = await developerWithReadyDatabase(p);
    const body = { configUrl: sso.op.configUrl, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://evil.test/steal' };
    const attempts = (base: string) =>
      [
        ['GET', `${base}/auth/oidc/providers`],
        ['GET', `${base}/auth/oidc/providers/guarded`],
        ['PUT', `${base}/auth/oidc/providers/guarded`],
        ['DELETE', `${base}/auth/oidc/providers/guarded`],
        ['POST', `${base}/auth/oidc/providers/new-one`],
      ] as const;
    for (const [method, path] of attempts(T)) {
      const json = method === 'PUT' || method === 'POST' ? body : undefined;
      expectApiError(await sso.request(method, path, { token: member.jwt, json }), 403, 'developer_token_required');
      expectApiError(await sso.request(method, path, { token: outsider.token, json }), 404);
    }
    for (const [method, path] of attempts(`${owner.D}/tenants/${otherTenant.id}`)) {
      const json = method === 'PUT' || method === 'POST' ? body : undefined;
      expectApiError(await sso.request(method, path, { token: member.jwt, json }), 404, 'tenant_not_found');
    }
    expectApiError(await sso.request('GET', `${owner.D}/tenants/auth/oidc/providers`, { token: member.jwt }), 403, 'developer_token_required');
    const still = await sso.request('GET', `${T}/auth/oidc/providers/guarded`, { token: owner.token });
    expect(still.body.redirectURI).to.equal('https://app.test/sso');
  });

  it('lists the login URLs of enabled providers to anyone, filtered by provider and email', async function () {
    const db = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, db.token, db.D);
    const TT = `${db.D}/tenants/${tenant.id}`;
    await registerProvider(sso, db.token, TT, { emailDomains: ['corp.test'] }, 'work');
    await registerProvider(sso, db.token, TT, { emailDomains: ['corp.test'], enabled: false }, 'off');
    const locations = await sso.request('GET', `${db.D}/tenants/auth/oidc/locations`);
    expect(locations.status, locations.text).to.equal(200);
    expect(locations.body).to.deep.equal([{ tenantId: tenant.id, provider: 'work', uri: `http://api.test${TT}/auth/oidc/providers/work/login` }]);
    expect((await sso.request('GET', `${db.D}/tenants/auth/oidc/locations?email=a%40corp.test`)).body).to.have.length(1);
    expect((await sso.request('GET', `${db.D}/tenants/auth/oidc/locations?email=a%40else.test`)).body).to.deep.equal([]);
    expect((await sso.request('GET', `${db.D}/tenants/auth/oidc/locations?provider=off`)).body).to.deep.equal([]);
    const unknown = await sso.request('GET', `/workspaces/${db.slug}/databases/nothing_here/tenants/auth/oidc/locations`);
    expect(unknown.status).to.equal(200);
    expect(unknown.body).to.deep.equal([]);
  });

  it('answers no 5xx for malformed input on any SSO route', async function () {
    const paths = [
      ['POST', `${T}/auth/oidc/providers/x`],
      ['PUT', `${T}/auth/oidc/providers/x`],
      ['GET', `${T}/auth/oidc/providers/${'x'.repeat(200)}`],
      ['GET', `${owner.D}/tenants/not-a-uuid/auth/oidc/providers`],
      ['GET', `${owner.D}/tenants/auth/oidc/providers?email=${'a'.repeat(400)}`],
      ['GET', `${owner.D}/tenants/auth/oidc/locations?provider=`],
      ['GET', `${T}/auth/oidc/providers/x/login?link=maybe`],
      ['GET', `${T}/auth/oidc/callback?state=${'s'.repeat(5000)}&code=c`],
      ['GET', `${T}/auth/oidc/callback?state=a&state=b&code=c`],
      ['GET', `${owner.D}/tenants/00000000-0000-0000-0000-000000000000/auth/oidc/callback?state=x&code=y`],
    ] as const;
    const complete = { configUrl: sso.op.configUrl, clientId: 'c', clientSecret: 's', emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' };
    const bodies = [
      undefined,
      'null',
      '[]',
      '{"configUrl": 5}',
      '{"emailDomains": [null]}',
      `{"clientId": "${'c'.repeat(300)}"}`,
      '{"redirectURI": "\\u0000"}',
      ...(['clientId', 'clientSecret', 'configUrl', 'redirectURI'] as const).map((field) => JSON.stringify({ ...complete, [field]: `${complete[field]}\u0000` })),
      JSON.stringify({ ...complete, emailDomains: ['corp.test\u0000'] }),
      JSON.stringify({ ...complete, clientId: 'lone \ud800' }),
    ];
    for (const [method, path] of paths) {
      for (const body of method === 'GET' ? [undefined] : bodies) {
        const answer = await sso.request(method, path, { token: owner.token, ...(body === undefined ? {} : { raw: body, contentType: 'application/json' }) });
        expect(answer.status, `${method} ${path} ${body}: ${answer.text}`).to.be.within(200, 499);
      }
    }
  });

  it('rotates the key ring: a new first key seals every secret again at start-up; a dropped key needs the secret again', async function () {
    const registration = await registerProvider(sso, owner.token, T, {}, 'rotated');
    const id = registration.body.id as string;
    const path = `${T}/auth/oidc/providers/rotated`;
    const newKey = `rot2:${Buffer.alloc(32, 9).toString('base64')}`;
    const withKeys = async (keys: string) =>
      startApi(loadApiConfig({ ...p.env, API_PORT: String(await freePort()), SSO_SECRET_KEYS: keys, SSO_ALLOW_LOOPBACK_HTTP: 'true' }));

    sso.op.addAccount({ sub: 'rotation', email: 'rotation@corp.test' });
    const rotated = await withKeys(`${newKey},${TEST_SSO_KEYS}`);
    try {
      expect(await sealedSecretOf(id)).to.match(/^v1\.rot2\./);
      const viaRotated = await signInWithProvider({ ...sso, api: rotated, request: httpClient(rotated.url) }, T, 'rotated', 'rotation');
      expect(viaRotated.status, viaRotated.html).to.equal(200);
    } finally {
      await rotated.close();
    }
    // A replica that never got the new key cannot read what it sealed: the secret must be given again.
    const unreadable = await signInWithProvider(sso, T, 'rotated', 'rotation');
    expect(unreadable.status, unreadable.html).to.equal(503);
    expect(pageErrorCode(unreadable.html)).to.equal('client_secret_unreadable');
    const given = await sso.request('PUT', path, { token: owner.token, json: { clientSecret: registration.clientSecret } });
    expect(given.status, given.text).to.equal(200);
    expect(await sealedSecretOf(id)).to.match(/^v1\.test1\./);

    // Back to the tests' key for every registration, and the secret still works at the provider.
    await (await withKeys(`${TEST_SSO_KEYS},${newKey}`)).close();
    sso.op.addAccount({ sub: 'after-rotation', email: 'after-rotation@corp.test' });
    const signedIn = await signInWithProvider(sso, T, 'rotated', 'after-rotation');
    expect(signedIn.status, signedIn.html).to.equal(200);
  });
});
