import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { rejection } from '@platform/testing';
import { hiddenFields, signInAt, signUpDeveloper, visit } from '@platform/test-fixtures';
import { platform, startTestTokenService, type TestPlatform } from './support/platform.js';
import { authorizationUrl, basic, CALLBACK, CLI, expectAccepted, expectOAuthError, expectRefusedWithinBound, expectTokens, obtainCode, otherClients, pkce, redeem, refresh, tokenRequest } from './support/oauth-requests.js';

/**
 * The token service attacked over HTTP where codes are made and spent: the authorization
 * endpoint, the sign-in and sign-up pages, the authorization_code grant. It runs on the shared
 * control plane with an API (its own process) that trusts it (REVOCATION_POLL_MS=200). Each case
 * is something a client, a thief or a forger could try; each asserts the exact refusal and what
 * it leaves behind.
 */
describe('OAuth token service under attack: codes and the pages that issue them', function () {
  this.timeout(60_000);
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  // ---- Codes ----------------------------------------------------------------------------------

  it('code replay: the second redemption is refused and revokes what the first one issued', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const grant = await obtainCode(credentials);
    const first = expectTokens(await redeem(grant), 'first redemption');
    await expectAccepted(first.access_token);

    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'replayed code');
    expectOAuthError(await refresh(first.refresh_token), 400, 'invalid_grant', 'refresh token of the replayed code');
    await expectRefusedWithinBound(first.access_token);
  });

  it('parallel redemption of one code: exactly one succeeds, and the others count as replays', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const grant = await obtainCode(credentials);
    const responses = await Promise.all(Array.from({ length: 6 }, () => redeem(grant)));
    const won = responses.filter((response) => response.status === 200);
    expect(won, responses.map((response) => response.status).join(',')).to.have.length(1);
    for (const response of responses.filter((r) => r.status !== 200)) expectOAuthError(response, 400, 'invalid_grant', 'a losing redemption');
    expectOAuthError(await refresh(won[0].body.refresh_token), 400, 'invalid_grant', "the winner's refresh token after the replays");
  });

  it('expired code: a code older than OAUTH_CODE_TTL is invalid_grant', async function () {
    const short = await startTestTokenService(p.controlPlane, { OAUTH_CODE_TTL: '1' });
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

  it('throttles developer sign-in per account and address, and sign-up per address (429 pages)', async function () {
    // A minute's wait once limits are reached; each client below is an address of its own.
    const strict = await startTestTokenService(p.controlPlane, { LOGIN_DELAY_AFTER_FAILURES: '2', LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '4', LOGIN_DELAY_FIRST: '60' });
    try {
      const credentials = await signUpDeveloper(strict.issuer, { from: '127.0.21.1' });
      const url = () =>
        authorizationUrl(strict.issuer, {
          response_type: 'code',
          client_id: CLI,
          redirect_uri: CALLBACK,
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
        });
      const wrong = { email: credentials.email.toUpperCase(), password: 'not-the-password' };
      expect((await signInAt(url(), wrong, '127.0.21.2')).status).to.equal(401);
      expect((await signInAt(url(), wrong, '127.0.21.2')).status).to.equal(401);
      const blocked = await signInAt(url(), credentials, '127.0.21.2');
      expect(blocked.status).to.equal(429);
      expect(blocked.location).to.equal(null);
      expect(blocked.html).to.include('Too many failed attempts; try again in 60 seconds.');
      // The guesses came from elsewhere: the developer signs in from their own address.
      const elsewhere = await signInAt(url(), credentials, '127.0.21.3');
      expect(elsewhere.status, elsewhere.html).to.equal(303);
      expect(elsewhere.location).to.match(new RegExp(`^${CALLBACK}\\?code=`));
      // Sign-ups spend their address's budget whether they succeed or not: four, then 429.
      for (let i = 0; i < 4; i++) await signUpDeveloper(strict.issuer, { from: '127.0.21.4' });
      const refused = await rejection(signUpDeveloper(strict.issuer, { from: '127.0.21.4' }));
      expect(String(refused)).to.match(/sign-up: 429 /);
    } finally {
      await strict.close();
    }
  });

  it('a wrong code_verifier is invalid_grant and spends the code', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const grant = await obtainCode(credentials);
    expectOAuthError(await redeem({ ...grant, verifier: pkce().verifier }), 400, 'invalid_grant', 'wrong verifier');
    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'the right verifier afterwards');
  });

  it('redirect_uri off by a trailing slash: an error page at the authorize endpoint, invalid_grant at the token endpoint', async function () {
    const { challenge } = pkce();
    const page = await visit(
      authorizationUrl(p.issuer, {
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
      const refused = await visit(authorizationUrl(p.issuer, { response_type: 'code', client_id: CLI, redirect_uri: near, code_challenge: challenge, code_challenge_method: 'S256' }));
      expect(refused.status, near).to.equal(400);
      expect(refused.location, near).to.equal(null);
    }

    const credentials = await signUpDeveloper(p.issuer);
    const grant = await obtainCode(credentials);
    expectOAuthError(await redeem({ ...grant, redirectUri: `${CALLBACK}/` }), 400, 'invalid_grant', 'redirect_uri with a trailing slash');
    // A mismatch spends the code like a wrong verifier does.
    expectOAuthError(await redeem(grant), 400, 'invalid_grant', 'the right redirect_uri afterwards');
  });

  it("a code stolen by another client is invalid_grant there, and does not spend the owner's code", async function () {
    const { publicId, confidentialId, secret } = await otherClients();
    const credentials = await signUpDeveloper(p.issuer);
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
      const response = await visit(authorizationUrl(p.issuer, { ...base, ...override, state }));
      expect(response.status, what).to.equal(303);
      const back = new URL(response.location!);
      expect(back.origin + back.pathname, what).to.equal(CALLBACK);
      expect(back.searchParams.get('error'), what).to.equal(error);
      expect(back.searchParams.get('state'), what).to.equal(state);
      expect(back.searchParams.get('iss'), what).to.equal(p.issuer);
      expect(back.searchParams.has('code'), what).to.equal(false);
    }
  });


  // ---- The sign-in and sign-up pages ------------------------------------------------------------

  it('the sign-in form: no CSRF cookie or a mismatched csrf field is 403, a wrong password 401, and neither gives a code', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const { challenge } = pkce();
    const url = authorizationUrl(p.issuer, { response_type: 'code', client_id: CLI, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
    const action = `${p.issuer}/oauth2/authorize`;
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
    const echoed = await visit(authorizationUrl(p.issuer, { response_type: 'code', client_id: CLI, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', state: hostile }));
    expect(echoed.status).to.equal(200);
    expect(echoed.html).not.to.include('<script>');
    expect(hiddenFields(echoed.html).state).to.equal(hostile);
  });

  it('sign-up: a taken email in another case is 409, a 7-character password is 400', async function () {
    const taken = await signUpDeveloper(p.issuer);
    const attempt = async (email: string, password: string) => {
      const page = await visit(`${p.issuer}/signup`);
      return visit(`${p.issuer}/signup`, { form: { ...hiddenFields(page.html), email, password, name: 'Mallory' }, cookie: page.cookie });
    };
    const noCookie = await visit(`${p.issuer}/signup`, { form: { csrf: randomBytes(32).toString('base64url'), email: `x-${taken.email}`, password: 'long enough password' } });
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
});
