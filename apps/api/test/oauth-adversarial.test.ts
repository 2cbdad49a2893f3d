import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import type { TestResponse } from '@platform/testing';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';
import { developerWithWorkspace, expectApiError } from './support/fixtures.js';
import { hiddenFields, signInAt, signUpDeveloper, startTokenServiceProcess, visit, type TokenServiceUnderTest } from './support/token-service.js';

/**
 * The token service attacked over HTTP: apps/oauth as its own process on the shared control
 * plane, and an API that trusts it (REVOCATION_POLL_MS=200). Each case is something a client,
 * a thief or a forger could try; each asserts the exact refusal and what it leaves behind.
 */
describe('OAuth token service under attack', function () {
  this.timeout(60_000);
  const CLI = 'platform-cli';
  const CALLBACK = 'http://127.0.0.1:53682/callback';
  /** The API refuses a revoked family's access tokens within this (poll interval 200 ms). */
  const REVOCATION_BOUND_MS = 3_000;
  let p: TestPlatform;
  let service: TokenServiceUnderTest;

  before(async function () {
    p = await platform();
    service = await startTokenServiceProcess(p);
  });

  after(async function () {
    await service?.close();
  });

  // ---- Helpers --------------------------------------------------------------------------------

  function pkce() {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  function authorizationUrl(issuer: string, params: Record<string, string | undefined>): string {
    const url = new URL('/oauth2/authorize', issuer);
    for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
    return url.toString();
  }

  /** A code for `credentials`, got through the sign-in page as a browser would. */
  async function obtainCode(
    credentials: { email: string; password: string },
    options: { issuer?: string; clientId?: string; redirectUri?: string; scope?: string } = {},
  ) {
    const issuer = options.issuer ?? service.issuer;
    const redirectUri = options.redirectUri ?? CALLBACK;
    const { verifier, challenge } = pkce();
    const state = randomBytes(8).toString('hex');
    const signedIn = await signInAt(
      authorizationUrl(issuer, {
        response_type: 'code',
        client_id: options.clientId ?? CLI,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        scope: options.scope,
        state,
      }),
      credentials,
    );
    expect(signedIn.status, signedIn.html.slice(0, 500)).to.equal(303);
    const back = new URL(signedIn.location!);
    expect(back.origin + back.pathname).to.equal(redirectUri);
    expect(back.searchParams.get('state')).to.equal(state);
    const code = back.searchParams.get('code');
    expect(code, signedIn.location!).to.be.a('string');
    return { code: code as string, verifier, redirectUri };
  }

  function tokenRequest(fields: Record<string, string>, headers: Record<string, string> = {}, oauth = service.oauth) {
    return oauth('POST', '/oauth2/token', { raw: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded', headers });
  }

  function formRequest(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    return service.oauth('POST', path, { raw: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded', headers });
  }

  function redeem(grant: { code: string; verifier: string; redirectUri: string }, clientId = CLI, oauth = service.oauth) {
    return tokenRequest({ grant_type: 'authorization_code', client_id: clientId, code: grant.code, code_verifier: grant.verifier, redirect_uri: grant.redirectUri }, {}, oauth);
  }

  function refresh(refreshToken: string, clientId = CLI, extra: Record<string, string> = {}) {
    return tokenRequest({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken, ...extra });
  }

  function basic(id: string, secret: string): Record<string, string> {
    return { authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` };
  }

  /** RFC 6749 section 5.2, exactly: the status, `{error, error_description}` and no-store. */
  function expectOAuthError(response: TestResponse, status: number, error: string, what = '') {
    expect(response.status, `${what} ${response.text}`).to.equal(status);
    expect(response.body, what).to.be.an('object').that.has.all.keys('error', 'error_description');
    expect(response.body.error, what).to.equal(error);
    expect(response.body.error_description, what).to.be.a('string');
    expect(response.headers.get('cache-control'), what).to.equal('no-store');
  }

  function expectTokens(response: TestResponse, what = '') {
    expect(response.status, `${what} ${response.text}`).to.equal(200);
    expect(response.body.access_token, what).to.be.a('string');
    expect(response.body.refresh_token, what).to.be.a('string');
    return response.body as { access_token: string; refresh_token: string; scope: string };
  }

  /** A fresh developer's first token pair from the CLI client. */
  async function signedInTokens(scope?: string) {
    const credentials = await signUpDeveloper(service.issuer);
    return expectTokens(await redeem(await obtainCode(credentials, { scope })), 'first redemption');
  }

  async function expectAccepted(accessToken: string) {
    const response = await service.trusting('GET', '/workspaces', { token: accessToken });
    expect(response.status, response.text).to.equal(200);
  }

  /** Polls the trusting API until it refuses the token, failing past the revocation bound. */
  async function expectRefusedWithinBound(accessToken: string) {
    const started = Date.now();
    for (;;) {
      const response = await service.trusting('GET', '/workspaces', { token: accessToken });
      if (response.status === 401) {
        expectApiError(response, 401, 'invalid_token');
        return Date.now() - started;
      }
      expect(response.status, response.text).to.equal(200);
      expect(Date.now() - started, 'the API refuses the revoked family within the poll bound').to.be.below(REVOCATION_BOUND_MS);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** A workspace of its own with another public client (loopback) and a confidential one. */
  async function otherClients() {
    const owner = await developerWithWorkspace(p);
    const register = async (body: object) => {
      const created = await p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token, json: body });
      expect(created.status, created.text).to.equal(201);
      return created.body as { client_id: string; client_secret?: string };
    };
    const publicClient = await register({ name: 'Other CLI', type: 'public', redirect_uris: ['http://127.0.0.1/callback'] });
    const confidential = await register({ name: 'Web app', type: 'confidential', redirect_uris: ['https://client.example/callback'] });
    return { publicId: publicClient.client_id, confidentialId: confidential.client_id, secret: confidential.client_secret as string };
  }

  // ---- Codes ----------------------------------------------------------------------------------

  it('code replay: the second redemption is refused and revokes what the first one issued', async function () {
    const credentials = await signUpDeveloper(service.issuer);
    const grant = await obtainCode(credentials);
    const first = expectTokens(await redeem(grant), 'first redemption');
    await expectAccepted(first.access_token);

    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'replayed code');
    expectOAuthError(await refresh(first.refresh_token), 400, 'invalid_grant', 'refresh token of the replayed code');
    await expectRefusedWithinBound(first.access_token);
  });

  it('parallel redemption of one code: exactly one succeeds, and the others count as replays', async function () {
    const credentials = await signUpDeveloper(service.issuer);
    const grant = await obtainCode(credentials);
    const responses = await Promise.all(Array.from({ length: 6 }, () => redeem(grant)));
    const won = responses.filter((response) => response.status === 200);
    expect(won, responses.map((response) => response.status).join(',')).to.have.length(1);
    for (const response of responses.filter((r) => r.status !== 200)) expectOAuthError(response, 400, 'invalid_grant', 'a losing redemption');
    expectOAuthError(await refresh(won[0].body.refresh_token), 400, 'invalid_grant', "the winner's refresh token after the replays");
  });

  it('expired code: a code older than OAUTH_CODE_TTL is invalid_grant', async function () {
    const short = await startTokenServiceProcess(p, { OAUTH_CODE_TTL: '1' });
    try {
      const credentials = await signUpDeveloper(short.issuer);
      // Redeemed at once, a code of this service works: what fails below is the age alone.
      expectTokens(await redeem(await obtainCode(credentials, { issuer: short.issuer }), CLI, short.oauth), 'a fresh code');
      const grant = await obtainCode(credentials, { issuer: short.issuer });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expectOAuthError(await redeem(grant, CLI, short.oauth), 400, 'invalid_grant', 'expired code');
    } finally {
      await short.close();
    }
  });

  it('throttles developer sign-in per email and sign-up per address (429 pages), even for the right password', async function () {
    const strict = await startTokenServiceProcess(p, { LOGIN_MAX_FAILURES_PER_EMAIL: '2', LOGIN_MAX_FAILURES_PER_CLIENT: '3' });
    try {
      const credentials = await signUpDeveloper(strict.issuer);
      const url = authorizationUrl(strict.issuer, {
        response_type: 'code',
        client_id: CLI,
        redirect_uri: CALLBACK,
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      });
      const wrong = { email: credentials.email.toUpperCase(), password: 'not-the-password' };
      expect((await signInAt(url, wrong)).status).to.equal(401);
      expect((await signInAt(url, wrong)).status).to.equal(401);
      const blocked = await signInAt(url, credentials);
      expect(blocked.status).to.equal(429);
      expect(blocked.location).to.equal(null);
      expect(blocked.html).to.include('Too many failed attempts');
      // Sign-ups count per address whether they succeed or not: the first was above.
      await signUpDeveloper(strict.issuer);
      await signUpDeveloper(strict.issuer);
      const refused = await signUpDeveloper(strict.issuer).catch((error: Error) => error);
      expect(String(refused)).to.match(/sign-up: 429/);
    } finally {
      await strict.close();
    }
  });

  it('a wrong code_verifier is invalid_grant and spends the code', async function () {
    const credentials = await signUpDeveloper(service.issuer);
    const grant = await obtainCode(credentials);
    expectOAuthError(await redeem({ ...grant, verifier: pkce().verifier }), 400, 'invalid_grant', 'wrong verifier');
    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'the right verifier afterwards');
  });

  it('redirect_uri off by a trailing slash: an error page at the authorize endpoint, invalid_grant at the token endpoint', async function () {
    const { challenge } = pkce();
    const page = await visit(
      authorizationUrl(service.issuer, {
        response_type: 'code',
        client_id: CLI,
        redirect_uri: `${CALLBACK}/`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'xyz',
      }),
    );
    expect(page.status).to.equal(400);
    expect(page.location, 'never redirected to an unregistered URI').to.equal(null);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.html).to.include('not one the application registered');
    for (const near of [
      'http://127.0.0.1:53682/callback?next=https://evil.test',
      'http://127.0.0.1:53682/callback#fragment',
      'http://127.0.0.1:53682@evil.test/callback',
      'http://localhost:53682/callback',
      'http://127.0.0.1:53682/Callback',
      'https://127.0.0.1:53682/callback',
      'http://127.0.0.1:53682/callback/../evil',
    ]) {
      const refused = await visit(authorizationUrl(service.issuer, { response_type: 'code', client_id: CLI, redirect_uri: near, code_challenge: challenge, code_challenge_method: 'S256' }));
      expect(refused.status, near).to.equal(400);
      expect(refused.location, near).to.equal(null);
    }

    const credentials = await signUpDeveloper(service.issuer);
    const grant = await obtainCode(credentials);
    expectOAuthError(await redeem({ ...grant, redirectUri: `${CALLBACK}/` }), 400, 'invalid_grant', 'redirect_uri with a trailing slash');
    // A mismatch spends the code like a wrong verifier does.
    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'the right redirect_uri afterwards');
  });

  it("a code stolen by another client is invalid_grant there, and does not spend the owner's code", async function () {
    const { publicId, confidentialId, secret } = await otherClients();
    const credentials = await signUpDeveloper(service.issuer);
    const grant = await obtainCode(credentials);
    // The thief holds everything: the code, the verifier and the redirect URI.
    expectOAuthError(await redeem(grant, publicId), 400, 'invalid_grant', 'public client B');
    expectOAuthError(
      await tokenRequest({ grant_type: 'authorization_code', code: grant.code, code_verifier: grant.verifier, redirect_uri: grant.redirectUri }, basic(confidentialId, secret)),
      400,
      'invalid_grant',
      'confidential client C',
    );
    // redeemCode's condition names the client: the thief's attempts neither spend the code nor count as a replay.
    const tokens = expectTokens(await redeem(grant), 'the owner, after the theft');
    await expectAccepted(tokens.access_token);
  });

  // ---- The authorization endpoint -------------------------------------------------------------

  it('PKCE is required: plain or no challenge is invalid_request, response_type=token is unsupported_response_type, sent back to the client', async function () {
    const { challenge } = pkce();
    const base = { response_type: 'code', client_id: CLI, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256' };
    const cases: [string, Record<string, string | undefined>, string][] = [
      ['code_challenge_method=plain', { code_challenge: pkce().verifier, code_challenge_method: 'plain' }, 'invalid_request'],
      ['plain with an S256-shaped challenge', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['no code_challenge', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      ['no code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['a scope that does not exist', { scope: 'api:read api:admin' }, 'invalid_scope'],
    ];
    for (const [what, override, error] of cases) {
      const state = randomBytes(6).toString('hex');
      const response = await visit(authorizationUrl(service.issuer, { ...base, ...override, state }));
      expect(response.status, what).to.equal(303);
      const back = new URL(response.location!);
      expect(back.origin + back.pathname, what).to.equal(CALLBACK);
      expect(back.searchParams.get('error'), what).to.equal(error);
      expect(back.searchParams.get('state'), what).to.equal(state);
      expect(back.searchParams.get('iss'), what).to.equal(service.issuer);
      expect(back.searchParams.has('code'), what).to.equal(false);
    }
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
    expect(claims).to.include({ iss: service.issuer, aud: TEST_AUDIENCE, kind: 'developer', client_id: CLI });
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
      "the shared API's issuer, not this one's": await resign({ ...claims, iss: TEST_ISSUER }),
      'an expired token': await resign({ ...claims, iat: now - 7_200, exp: now - 3_600 }),
      'typ JWT': await resign(claims, { alg: 'ES256', typ: 'JWT' }),
      'no typ': await resign(claims, { alg: 'ES256' }),
      'a changed payload under the real signature': `${real.split('.')[0]}.${unsigned({ ...claims, scope: 'api:read api:write admin' })}.${real.split('.')[2]}`,
    };
    for (const [what, token] of Object.entries(forged)) {
      const response = await service.trusting('GET', '/workspaces', { token });
      expect(response.status, `${what}: ${response.text}`).to.equal(401);
      expectApiError(response, 401, 'invalid_token');
      expect(response.headers.get('www-authenticate'), what).to.equal('Bearer error="invalid_token"');
    }
  });

  // ---- The sign-in and sign-up pages ------------------------------------------------------------

  it('the sign-in form: no CSRF cookie or a mismatched csrf field is 403, a wrong password 401, and neither gives a code', async function () {
    const credentials = await signUpDeveloper(service.issuer);
    const { challenge } = pkce();
    const url = authorizationUrl(service.issuer, { response_type: 'code', client_id: CLI, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
    const action = `${service.issuer}/oauth2/authorize`;
    const page = await visit(url);
    expect(page.status).to.equal(200);
    expect(page.cookie).to.match(/^oauth_csrf=[A-Za-z0-9_-]{43}$/);
    expect(page.headers.get('set-cookie')).to.include('HttpOnly').and.include('SameSite=Strict');
    const fields = hiddenFields(page.html);
    expect(fields.csrf).to.equal(page.cookie!.split('=')[1]);
    const another = `oauth_csrf=${randomBytes(32).toString('base64url')}`;

    const attempts: [string, Record<string, string>, string | undefined, number][] = [
      ['no CSRF cookie', { ...fields, ...credentials }, undefined, 403],
      ['a mismatched csrf field', { ...fields, ...credentials, csrf: randomBytes(32).toString('base64url') }, page.cookie, 403],
      ['no csrf field', { ...Object.fromEntries(Object.entries(fields).filter(([name]) => name !== 'csrf')), ...credentials }, page.cookie, 403],
      ["another session's cookie", { ...fields, ...credentials }, another, 403],
      ['a wrong password', { ...fields, email: credentials.email, password: `${credentials.password}x` }, page.cookie, 401],
    ];
    for (const [what, form, cookie, status] of attempts) {
      const posted = await visit(action, { form, cookie });
      expect(posted.status, what).to.equal(status);
      expect(posted.location, what).to.equal(null);
      expect(posted.headers.get('content-type'), what).to.match(/^text\/html/);
      expect(posted.html, what).not.to.include('code=');
    }

    // The same form with the cookie it came with signs in.
    const signedIn = await visit(action, { form: { ...fields, ...credentials }, cookie: page.cookie });
    expect(signedIn.status).to.equal(303);
    expect(new URL(signedIn.location!).searchParams.get('code')).to.be.a('string');

    // The request's parameters are echoed into the page escaped, and come back unchanged.
    const hostile = '"><script>alert(1)</script>';
    const echoed = await visit(authorizationUrl(service.issuer, { response_type: 'code', client_id: CLI, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', state: hostile }));
    expect(echoed.status).to.equal(200);
    expect(echoed.html).not.to.include('<script>');
    expect(hiddenFields(echoed.html).state).to.equal(hostile);
  });

  it('sign-up: a taken email in another case is 409, a 7-character password is 400', async function () {
    const taken = await signUpDeveloper(service.issuer);
    const attempt = async (email: string, password: string) => {
      const page = await visit(`${service.issuer}/signup`);
      return visit(`${service.issuer}/signup`, { form: { ...hiddenFields(page.html), email, password, name: 'Mallory' }, cookie: page.cookie });
    };
    const noCookie = await visit(`${service.issuer}/signup`, { form: { csrf: randomBytes(32).toString('base64url'), email: `x-${taken.email}`, password: 'long enough password' } });
    expect(noCookie.status, 'sign-up without the CSRF cookie').to.equal(403);
    const conflict = await attempt(taken.email.toUpperCase(), 'long enough password');
    expect(conflict.status, conflict.html.slice(0, 300)).to.equal(409);
    expect(conflict.headers.get('content-type')).to.match(/^text\/html/);
    expect(conflict.html).to.include('already exists');
    // The original account is untouched: its password still signs in.
    await obtainCode(taken);

    const email = `dev-${randomBytes(5).toString('hex')}@example.test`;
    const short = await attempt(email, 'x'.repeat(7));
    expect(short.status, short.html.slice(0, 300)).to.equal(400);
    expect(short.html).to.include('Password must be 8');
    // Nothing was created: the email is still free.
    expect((await attempt(email, 'x'.repeat(8))).status).to.equal(200);
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
  it('answers 4xx, never 5xx, for a body that does not match its Content-Encoding and for a loopback port past 65535', async function () {
    for (const path of ['/oauth2/token', '/oauth2/revoke', '/oauth2/introspect', '/oauth2/authorize', '/signup']) {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const response = await fetch(`${service.issuer}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': encoding },
          body: 'grant_type=client_credentials',
        });
        expect(response.status, `${path} ${encoding}`).to.be.within(400, 499);
      }
    }
    for (const responseType of ['code', 'token']) {
      const page = await visit(
        authorizationUrl(service.issuer, {
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
