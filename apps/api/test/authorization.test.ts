import { expect } from 'chai';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { issueDeveloperToken } from '@platform/auth';
import { API_SCOPES, systemClock } from '@platform/domain';
import { createDatabase, developerWithWorkspace, expectApiError } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('authorization', function () {
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithWorkspace>>;
  const databaseName = 'guarded';

  before(async function () {
    p = await platform();
    owner = await developerWithWorkspace(p);
    await createDatabase(p, owner.token, owner.slug, databaseName);
  });

  /** Every workspace-scoped operation, aimed at the owner's workspace and database. */
  function operations() {
    const W = `/workspaces/${owner.slug}`;
    const D = `${W}/databases/${databaseName}`;
    return [
      { method: 'GET', path: W },
      { method: 'GET', path: `${W}/regions` },
      { method: 'GET', path: `${W}/databases` },
      { method: 'POST', path: `${W}/databases`, json: { databaseName: 'intruder', region: 'AWS_US_WEST_2' } },
      { method: 'GET', path: D },
      { method: 'PUT', path: D, json: { name: 'hijacked' } },
      { method: 'DELETE', path: D },
    ];
  }

  async function expectUnchanged() {
    const listed = await p.request('GET', `/workspaces/${owner.slug}/databases`, { token: owner.token });
    expect(listed.body.map((d: { name: string }) => d.name)).to.deep.equal([databaseName]);
  }

  async function forgedTokens(): Promise<Record<string, string>> {
    const { kid } = await p.controlPlane.keys.signingKey();
    const { id } = await p.controlPlane.newDeveloper();
    const claims = { sub: owner.developer.id, iss: TEST_ISSUER, aud: TEST_AUDIENCE, kind: 'developer', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 600 };
    const jwks = await p.controlPlane.keys.publicJwks();
    const publicJwk = jwks.keys.find((key) => key.kid === kid);
    const stranger = await generateKeyPair('ES256');
    const sign = (settings: { issuer: string; audience: string }, developerId = owner.developer.id) =>
      issueDeveloperToken(p.controlPlane.keys, { ...settings, clock: systemClock }, { developerId, clientId: 'tests', scopes: API_SCOPES, ttlSeconds: 600 }).then((t) => t.token);
    return {
      'alg none': `${base64url({ alg: 'none', typ: 'at+jwt', kid })}.${base64url(claims)}.`,
      'HS256 keyed with the public key': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid })
        .sign(new TextEncoder().encode(JSON.stringify(publicJwk))),
      'a key outside the set': await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid }).sign(stranger.privateKey),
      'an unknown kid': await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'nope' }).sign(stranger.privateKey),
      'the wrong audience': await sign({ issuer: TEST_ISSUER, audience: 'http://elsewhere.test' }),
      'the wrong issuer': await sign({ issuer: 'http://evil.test', audience: TEST_AUDIENCE }),
      'an expired token': (await p.controlPlane.newDeveloper({ ttlSeconds: 60, clock: { now: () => new Date(Date.now() - 3_600_000) } })).token,
      'a truncated signature': owner.token.slice(0, -10),
      'garbage': 'not.a.jwt',
      'a stranger with a valid token (for their own id)': await sign({ issuer: TEST_ISSUER, audience: TEST_AUDIENCE }, id),
      'the public JWK as a token': Buffer.from(JSON.stringify(await exportJWK(stranger.publicKey))).toString('base64url'),
    };
  }

  it('answers 401 without a token, with a malformed header, and with every forged or invalid token', async function () {
    const tokens = await forgedTokens();
    delete (tokens as Record<string, string>)['a stranger with a valid token (for their own id)'];
    for (const op of operations()) {
      const none = await p.request(op.method, op.path, { json: op.json });
      expectApiError(none, 401, 'unauthorized');
      expect(none.headers.get('www-authenticate')).to.match(/^Bearer/);
      expectApiError(await p.request(op.method, op.path, { json: op.json, headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } }), 401, 'invalid_token');
      for (const [what, token] of Object.entries(tokens)) {
        const response = await p.request(op.method, op.path, { json: op.json, token });
        expect(response.status, `${op.method} ${op.path} with ${what}`).to.equal(401);
        expectApiError(response, 401, 'invalid_token');
      }
    }
    await expectUnchanged();
  });

  it('answers 404 to a developer outside the workspace, on every operation, and changes nothing', async function () {
    const outsider = await p.controlPlane.newDeveloper();
    for (const op of operations()) {
      const response = await p.request(op.method, op.path, { json: op.json, token: outsider.token });
      expectApiError(response, 404, 'workspace_not_found');
    }
    await expectUnchanged();
    const listed = await p.request('GET', '/workspaces', { token: outsider.token });
    expect(listed.body).to.deep.equal([]);
  });

  it('lets the owner do what outsiders cannot', async function () {
    for (const op of operations().filter((op) => op.method === 'GET')) {
      expect((await p.request(op.method, op.path, { token: owner.token })).status, op.path).to.equal(200);
    }
  });
});
