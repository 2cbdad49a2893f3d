import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { expectApiError, visit } from '@platform/test-fixtures';
import { OTHER_ISSUER, platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';
import { authorizationUrl, basic, CALLBACK, CLI, expectAccepted, expectOAuthError, expectRefusedWithinBound, expectTokens, formRequest, otherClients, pkce, refresh, signedInTokens, tokenRequest } from './support/oauth-requests.js';

/**
 * The token service attacked over HTTP where tokens are used: refresh, client authentication,
 * access tokens on the API (its own process, REVOCATION_POLL_MS=200) that trusts it, revocation
 * and introspection. Each case is something a client, a thief or a forger could try; each asserts
 * the exact refusal and what it leaves behind.
 */
describe('OAuth token service under attack: tokens', function () {
  this.timeout(60_000);
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  // ---- Refresh tokens -------------------------------------------------------------------------

  it('refresh reuse: the spent token is refused and revokes its family, the new pair included', async function () {
    const first = await signedInTokens();
    const second = expectTokens(await refresh(first.refresh_token), 'first refresh');
    expect(second.refresh_token).to.not.equal(first.refresh_token);
    await expectAccepted(second.access_token);

    expectOAuthError(await refresh(first.refresh_token), 400, 'invalid_grant', 'reused refresh token');
    expectOAuthError(await refresh(second.refresh_token), 400, 'invalid_grant', 'the rotated refresh token after the reuse');
    await expectRefusedWithinBound(second.access_token);
  });

  it('parallel refresh with one token: exactly one succeeds', async function () {
    const first = await signedInTokens();
    const responses = await Promise.all(Array.from({ length: 8 }, () => refresh(first.refresh_token)));
    const won = responses.filter((response) => response.status === 200);
    expect(won, responses.map((response) => response.status).join(',')).to.have.length(1);
    for (const response of responses.filter((r) => r.status !== 200)) expectOAuthError(response, 400, 'invalid_grant', 'a losing refresh');
    // Concurrent uses are reuse (grants.ts): the family ends, the winner's token with it.
    expectOAuthError(await refresh(won[0].body.refresh_token), 400, 'invalid_grant', "the winner's rotated token");
  });

  it("another client's refresh token is invalid_grant, and a wider scope is invalid_scope without spending the token", async function () {
    const { publicId, confidentialId, secret } = await otherClients();
    const first = await signedInTokens('api:read');
    expect(first.scope).to.equal('api:read');
    expectOAuthError(await refresh(first.refresh_token, publicId), 400, 'invalid_grant', 'public client B');
    expectOAuthError(await tokenRequest({ grant_type: 'refresh_token', refresh_token: first.refresh_token }, basic(confidentialId, secret)), 400, 'invalid_grant', 'confidential client C');

    expectOAuthError(await refresh(first.refresh_token, CLI, { scope: 'api:read api:write' }), 400, 'invalid_scope', 'a wider scope');
    expectOAuthError(await refresh(first.refresh_token, CLI, { scope: 'api:write' }), 400, 'invalid_scope', 'another scope');
    // Neither the other clients nor the refused scopes spent it.
    const next = expectTokens(await refresh(first.refresh_token), 'the same token afterwards');
    expect(next.scope).to.equal('api:read');
  });

  // ---- Client authentication and malformed requests ---------------------------------------------

  it('client authentication failures are 401 invalid_client; grant_type errors are 400; every error is RFC 6749 with no-store', async function () {
    const { publicId, confidentialId, secret } = await otherClients();
    const first = await signedInTokens();
    const wrongSecret = randomBytes(32).toString('base64url');

    const viaBasic = await tokenRequest({ grant_type: 'refresh_token', refresh_token: first.refresh_token }, basic(confidentialId, wrongSecret));
    expectOAuthError(viaBasic, 401, 'invalid_client', 'a wrong secret (Basic)');
    expect(viaBasic.headers.get('www-authenticate')).to.match(/^Basic /);
    const viaForm = await tokenRequest({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: confidentialId, client_secret: wrongSecret });
    expectOAuthError(viaForm, 401, 'invalid_client', 'a wrong secret (form)');
    expect(viaForm.headers.get('www-authenticate'), 'no Basic challenge when Basic was not used').to.equal(null);
    expectOAuthError(
      await tokenRequest({ grant_type: 'authorization_code', code: 'x', code_verifier: pkce().verifier, redirect_uri: CALLBACK }, basic(confidentialId, '')),
      401,
      'invalid_client',
      'an empty secret',
    );
    expectOAuthError(await refresh(first.refresh_token, CLI, { client_secret: 'anything' }), 401, 'invalid_client', 'a public client sending a secret');
    expectOAuthError(await refresh(first.refresh_token, publicId, { client_secret: secret }), 401, 'invalid_client', 'another public client sending a secret');
    expectOAuthError(await tokenRequest({ grant_type: 'refresh_token', refresh_token: first.refresh_token }), 401, 'invalid_client', 'no client at all');
    expectOAuthError(await tokenRequest({ grant_type: 'password', client_id: CLI, username: 'a', password: 'b' }), 400, 'unsupported_grant_type', 'grant_type=password');
    expectOAuthError(await tokenRequest({ grant_type: 'implicit' }, basic(confidentialId, secret)), 400, 'unsupported_grant_type', 'grant_type=implicit');
    expectOAuthError(await tokenRequest({ client_id: CLI, refresh_token: first.refresh_token }), 400, 'invalid_request', 'no grant_type');
    expectOAuthError(await tokenRequest({ grant_type: 'refresh_token', client_id: CLI }), 400, 'invalid_request', 'no refresh_token');
    expectOAuthError(await tokenRequest({ grant_type: 'authorization_code', client_id: CLI, code: 'x', redirect_uri: CALLBACK }), 400, 'invalid_request', 'no code_verifier');

    // None of those spent the refresh token.
    expectTokens(await refresh(first.refresh_token), 'the refresh token after the failures');
  });

  // ---- Tokens on the trusting API ---------------------------------------------------------------

  it('the trusting API refuses forged, misaddressed, expired and mistyped tokens in the shape the token service issues', async function () {
    const real = (await signedInTokens()).access_token;
    const header = decodeProtectedHeader(real);
    const claims = decodeJwt(real);
    // The shape under attack: a developer token of a refresh-token family, for a client.
    expect(header).to.include({ alg: 'ES256', typ: 'at+jwt' });
    expect(claims).to.include({ iss: p.issuer, aud: TEST_AUDIENCE, kind: 'developer', client_id: CLI });
    expect(claims.sid).to.be.a('string');
    await expectAccepted(real);

    // The trusting API and the token service share the control plane, hence this key set.
    const { kid, key } = await p.controlPlane.keys.signingKey();
    expect(kid, 'the control plane signs with the key the token service uses').to.equal(header.kid);
    const publicJwk = (await p.controlPlane.keys.publicJwks()).keys.find((candidate) => candidate.kid === kid)!;
    const now = Math.floor(Date.now() / 1000);
    const resign = (payload: JWTPayload, protectedHeader: { alg: string; typ?: string } = { alg: 'ES256', typ: 'at+jwt' }) =>
      new SignJWT({ ...payload, jti: randomBytes(8).toString('hex') }).setProtectedHeader({ ...protectedHeader, kid }).sign(key);
    const unsigned = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const point = Buffer.concat([Buffer.from([4]), Buffer.from(publicJwk.x!, 'base64url'), Buffer.from(publicJwk.y!, 'base64url')]);
    const hs256 = (secret: Uint8Array) => new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid }).sign(secret);

    // The forging harness is sound: the same claims signed properly are accepted.
    await expectAccepted(await resign(claims));

    const forged: Record<string, string> = {
      'alg none': `${unsigned({ alg: 'none', typ: 'at+jwt', kid })}.${unsigned(claims)}.`,
      'alg none, the real signature kept': `${unsigned({ alg: 'none', typ: 'at+jwt', kid })}.${unsigned(claims)}.${real.split('.')[2]}`,
      'HS256 keyed with the public JWK as JSON': await hs256(new TextEncoder().encode(JSON.stringify(publicJwk))),
      'HS256 keyed with the public point (x, y)': await hs256(point),
      'HS256 keyed with x': await hs256(Buffer.from(publicJwk.x!, 'base64url')),
      'the wrong audience': await resign({ ...claims, aud: 'http://elsewhere.test' }),
      'the wrong audience among others': await resign({ ...claims, aud: ['http://elsewhere.test', `${TEST_AUDIENCE}/`] }),
      'the wrong issuer': await resign({ ...claims, iss: 'http://evil.test' }),
      "another token service's issuer": await resign({ ...claims, iss: OTHER_ISSUER }),
      'an expired token': await resign({ ...claims, iat: now - 7_200, exp: now - 3_600 }),
      'typ JWT': await resign(claims, { alg: 'ES256', typ: 'JWT' }),
      'no typ': await resign(claims, { alg: 'ES256' }),
      'a changed payload under the real signature': `${real.split('.')[0]}.${unsigned({ ...claims, scope: 'api:read api:write admin' })}.${real.split('.')[2]}`,
    };
    for (const [what, token] of Object.entries(forged)) {
      const response = await p.request('GET', '/workspaces', { token });
      expect(response.status, `${what}: ${response.text}`).to.equal(401);
      expectApiError(response, 401, 'invalid_token');
      expect(response.headers.get('www-authenticate'), what).to.equal('Bearer error="invalid_token"');
    }
  });


  // ---- Revocation and introspection -------------------------------------------------------------

  it("revocation: another client's token is left alone, no client authentication is 401, a public client cannot introspect", async function () {
    const { publicId, confidentialId, secret } = await otherClients();
    const first = await signedInTokens();

    for (const [what, headers, fields] of [
      ['public client B', {}, { client_id: publicId }],
      ['confidential client C', basic(confidentialId, secret), {}],
    ] as const) {
      const revoked = await formRequest('/oauth2/revoke', { token: first.refresh_token, ...fields }, headers);
      expect(revoked.status, `${what}: ${revoked.text}`).to.equal(200);
      const viaAccess = await formRequest('/oauth2/revoke', { token: first.access_token, token_type_hint: 'access_token', ...fields }, headers);
      expect(viaAccess.status, `${what}: ${viaAccess.text}`).to.equal(200);
    }
    const next = expectTokens(await refresh(first.refresh_token), "the owner's token after others tried to revoke it");

    expectOAuthError(await formRequest('/oauth2/revoke', { token: next.refresh_token }), 401, 'invalid_client', 'revoke without client authentication');
    expectOAuthError(await formRequest('/oauth2/revoke', { token: next.refresh_token, client_id: CLI, client_secret: 'x' }), 401, 'invalid_client', 'revoke by a public client with a secret');
    expectOAuthError(await formRequest('/oauth2/introspect', { token: next.access_token, client_id: CLI }), 401, 'invalid_client', 'introspection by the owning public client');
    expectOAuthError(await formRequest('/oauth2/introspect', { token: next.access_token, client_id: publicId }), 401, 'invalid_client', 'introspection by another public client');
    expectTokens(await refresh(next.refresh_token), 'still usable after all that');
  });

  // JwtAccessTokens.read once let jose's TypeError for a non-JWT escape: these answered 500.
  it('answers 400, never 5xx, for a body that does not match its Content-Encoding and for a loopback port past 65535', async function () {
    for (const path of ['/oauth2/token', '/oauth2/revoke', '/oauth2/introspect', '/oauth2/authorize', '/signup']) {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const response = await fetch(`${p.issuer}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': encoding },
          body: 'grant_type=client_credentials',
        });
        expect(response.status, `${path} ${encoding}`).to.equal(400);
      }
    }
    for (const responseType of ['code', 'token']) {
      const page = await visit(
        authorizationUrl(p.issuer, {
          response_type: responseType,
          client_id: CLI,
          redirect_uri: 'http://127.0.0.1:99999/callback',
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
        }),
      );
      expect(page.status, responseType).to.equal(400);
      expect(page.location).to.equal(null);
    }
  });

  it('revocation and introspection of tokens that are not JWTs answer as RFC 7009 and 7662 say, not 500', async function () {
    const { confidentialId, secret } = await otherClients();
    const first = await signedInTokens();
    const unknown = randomBytes(32).toString('base64url');
    const cli = { client_id: CLI };
    const asConfidential = basic(confidentialId, secret);
    // RFC 7009 section 2.2: an invalid token is answered 200 like any other. RFC 7662 section 2.2:
    // a token the server cannot read is inactive. Each case is recorded, so a failure lists them all.
    const cases: [string, string, Record<string, string>, Record<string, string>][] = [
      ['revoke an unknown opaque token', '/oauth2/revoke', { token: unknown, ...cli }, {}],
      ['revoke an unknown opaque token hinted as an access token', '/oauth2/revoke', { token: unknown, token_type_hint: 'access_token', ...cli }, {}],
      ['introspect an unknown opaque token', '/oauth2/introspect', { token: unknown }, asConfidential],
      ['revoke a refresh token hinted as an access token', '/oauth2/revoke', { token: first.refresh_token, token_type_hint: 'access_token', ...cli }, {}],
    ];
    const outcomes: Record<string, number> = {};
    for (const [what, path, fields, headers] of cases) outcomes[what] = (await formRequest(path, fields, headers)).status;
    expect(outcomes).to.deep.equal(Object.fromEntries(cases.map(([what]) => [what, 200])));
    // The hint is only a hint: the refresh token's family is revoked all the same.
    expectOAuthError(await refresh(first.refresh_token), 400, 'invalid_grant', 'the refresh token revoked with a wrong hint');
    const introspected = await formRequest('/oauth2/introspect', { token: unknown }, asConfidential);
    expect(introspected.body).to.deep.equal({ active: false });
  });
});
