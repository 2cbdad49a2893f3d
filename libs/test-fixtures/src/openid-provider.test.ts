import { expect } from 'chai';
import * as oidc from 'openid-client';
import { rejection } from '@platform/testing';
import { startTestOpenIdProvider, type TestOidcClient, type TestOpenIdProvider } from './openid-provider.js';

const client: TestOidcClient = {
  clientId: 'platform-sso',
  clientSecret: 'platform-sso-secret-0123456789abcdef',
  // Never fetched: signIn() stops at the redirect to it.
  redirectUris: ['http://127.0.0.1:9/sso/callback'],
};

interface PendingAuthorization {
  url: URL;
  codeVerifier: string;
  state: string;
  nonce: string;
}

describe('the test OpenID Provider', function () {
  let op: TestOpenIdProvider;

  before(async function () {
    op = await startTestOpenIdProvider();
    op.addClient(client);
    op.addAccount({ sub: 'ada', email: 'ada@example.test', emailVerified: true, name: 'Ada Lovelace', givenName: 'Ada', familyName: 'Lovelace' });
    op.addAccount({ sub: 'unverified', email: 'unverified@example.test', emailVerified: false, name: 'Not Verified' });
  });

  after(async function () {
    await op.close();
  });

  afterEach(function () {
    op.discoveryOverride = null;
    op.idTokenOverride = null;
  });

  function discover(clientAuthentication?: oidc.ClientAuth): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(op.issuer), client.clientId, client.clientSecret, clientAuthentication, { execute: [oidc.allowInsecureRequests] });
  }

  async function startAuthorization(config: oidc.Configuration): Promise<PendingAuthorization> {
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: client.redirectUris[0],
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, codeVerifier, state, nonce };
  }

  function redeem(config: oidc.Configuration, callback: URL, pending: PendingAuthorization) {
    return oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
  }

  it('publishes a discovery document for a code flow with PKCE, RS256 ID tokens and iss in the response', async function () {
    const document = (await (await fetch(op.configUrl)).json()) as Record<string, any>;
    expect(op.configUrl).to.equal(`${op.issuer}/.well-known/openid-configuration`);
    expect(op.issuer).to.equal(op.origin).and.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(document.issuer).to.equal(op.issuer);
    expect(document.authorization_endpoint).to.equal(`${op.issuer}/auth`);
    expect(document.token_endpoint).to.equal(`${op.issuer}/token`);
    expect(document.jwks_uri).to.equal(`${op.issuer}/jwks`);
    expect(document.userinfo_endpoint).to.equal(`${op.issuer}/me`);
    expect(document.response_types_supported).to.deep.equal(['code']);
    expect(document.id_token_signing_alg_values_supported).to.include('RS256');
    expect(document.code_challenge_methods_supported).to.deep.equal(['S256']);
    expect(document.token_endpoint_auth_methods_supported).to.have.members(['client_secret_basic', 'client_secret_post']);
    expect(document.scopes_supported).to.include.members(['openid', 'email', 'profile']);
    expect(document.claims_supported).to.include.members(['sub', 'email', 'email_verified', 'name', 'given_name', 'family_name']);
    expect(document.authorization_response_iss_parameter_supported).to.equal(true);

    const jwks = (await (await fetch(document.jwks_uri)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys).to.have.length(1);
    expect(jwks.keys[0]).to.include({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0]).to.have.property('kid').that.is.a('string');
    expect(jwks.keys[0]).not.to.have.property('d');
  });

  it('completes a code flow with openid-client: callback with code, state and iss; an ID token with the account claims', async function () {
    const config = await discover(oidc.ClientSecretBasic(client.clientSecret));
    const pending = await startAuthorization(config);

    const callback = await op.signIn(pending.url.href, 'ada');
    expect(`${callback.origin}${callback.pathname}`).to.equal(client.redirectUris[0]);
    expect(callback.searchParams.get('code')).to.be.a('string').with.length.above(10);
    expect(callback.searchParams.get('state')).to.equal(pending.state);
    expect(callback.searchParams.get('iss')).to.equal(op.issuer);

    const tokens = await redeem(config, callback, pending);
    expect(tokens.access_token).to.be.a('string');
    expect(tokens.claims()).to.include({
      iss: op.issuer,
      aud: client.clientId,
      sub: 'ada',
      nonce: pending.nonce,
      email: 'ada@example.test',
      email_verified: true,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
    });
  });

  it('accepts client_secret_post too, and signs in by email; email_verified false when the account says so', async function () {
    const config = await discover(oidc.ClientSecretPost(client.clientSecret));
    const pending = await startAuthorization(config);

    const tokens = await redeem(config, await op.signIn(pending.url.href, 'unverified@example.test'), pending);
    expect(tokens.claims()).to.include({ sub: 'unverified', email: 'unverified@example.test', email_verified: false, name: 'Not Verified' });
  });

  it('serves a login page a browser can fill in, with cookies that are not Secure', async function () {
    const pending = await startAuthorization(await discover());
    const authorization = await fetch(pending.url, { redirect: 'manual' });
    expect(authorization.status).to.equal(303);
    const loginUrl = new URL(authorization.headers.get('location')!, op.origin);
    expect(loginUrl.pathname).to.match(/^\/interaction\/[\w-]+$/);
    const cookies = authorization.headers.getSetCookie();
    expect(cookies).to.have.length.above(0);
    for (const cookie of cookies) expect(cookie.toLowerCase()).not.to.match(/;\s*secure/);

    const cookieHeader = cookies.map((cookie) => cookie.split(';')[0]).join('; ');
    const page = await fetch(loginUrl, { headers: { cookie: cookieHeader } });
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    const html = await page.text();
    expect(html).to.include('<form method="post">');
    expect(html).to.match(/<input name="login"[^>]*>/);
    expect(html).to.include('<button type="submit">Sign in</button>');
  });

  it('idTokenOverride re-signs the ID token with altered claims, which openid-client then rejects for its aud', async function () {
    let rewritten: Record<string, unknown> | undefined;
    op.idTokenOverride = (claims) => (rewritten = { ...claims, aud: 'another-client' });
    const config = await discover();
    const pending = await startAuthorization(config);

    const error = await rejection(redeem(config, await op.signIn(pending.url.href, 'ada'), pending));
    // openid-client's own message is generic; the claim it compared is named in the cause.
    expect(error.code).to.equal('OAUTH_JWT_CLAIM_COMPARISON_FAILED');
    const cause = error.cause as Error & { cause: { claim: string } };
    expect(cause.message).to.equal('unexpected JWT "aud" (audience) claim value');
    expect(cause.cause.claim).to.equal('aud');
    expect(rewritten).to.include({ aud: 'another-client', sub: 'ada', nonce: pending.nonce });
  });

  it('idTokenOverride keeps the signature valid: an identity rewrite passes every check', async function () {
    op.idTokenOverride = (claims) => ({ ...claims, extra: 'kept' });
    const config = await discover();
    const pending = await startAuthorization(config);

    const tokens = await redeem(config, await op.signIn(pending.url.href, 'ada'), pending);
    expect(tokens.claims()).to.include({ sub: 'ada', extra: 'kept' });
  });

  it('discoveryOverride changes the document served, which openid-client then refuses', async function () {
    op.discoveryOverride = (document) => ({ ...document, issuer: 'https://impostor.example.test' });
    const document = (await (await fetch(op.configUrl)).json()) as Record<string, unknown>;
    expect(document.issuer).to.equal('https://impostor.example.test');
    expect(document.token_endpoint).to.equal(`${op.issuer}/token`);
    const error = await rejection(discover());
    expect(error.message).to.match(/issuer/i);

    op.discoveryOverride = null;
    const restored = (await (await fetch(op.configUrl)).json()) as Record<string, unknown>;
    expect(restored.issuer).to.equal(op.issuer);
  });

  it('redirectUrl answers 302 to the target, and requests records every request in order', async function () {
    const target = 'https://elsewhere.example.test/landing?x=1';
    const before = op.requests.length;
    const response = await fetch(op.redirectUrl(target), { redirect: 'manual' });
    expect(response.status).to.equal(302);
    expect(response.headers.get('location')).to.equal(target);
    await fetch(`${op.configUrl}?probe=1`);

    expect(op.requests.slice(before)).to.deep.equal([
      `GET /test-redirect?${new URLSearchParams({ to: target })}`,
      'GET /.well-known/openid-configuration?probe=1',
    ]);
  });

  it('signIn throws for an unknown login, and with the provider error when it refuses the request', async function () {
    const pending = await startAuthorization(await discover());
    const unknown = await rejection(op.signIn(pending.url.href, 'nobody'));
    expect(unknown.message).to.include('refused the login "nobody"').and.include('No account matches');

    const withoutPkce = new URL(pending.url);
    withoutPkce.searchParams.delete('code_challenge');
    withoutPkce.searchParams.delete('code_challenge_method');
    const refused = await rejection(op.signIn(withoutPkce.href, 'ada'));
    expect(refused.message).to.include('invalid_request').and.include('requires PKCE');
    expect((refused as Error & { callbackUrl?: URL }).callbackUrl?.searchParams.get('state')).to.equal(pending.state);

    const unknownClient = new URL(pending.url);
    unknownClient.searchParams.set('client_id', 'not-registered');
    expect((await rejection(op.signIn(unknownClient.href, 'ada'))).message).to.include('invalid_client');
  });

  it('takes clients and accounts added after start, and close() stops it', async function () {
    const late = await startTestOpenIdProvider();
    try {
      late.addClient({ ...client, clientId: 'late-client' });
      late.addAccount({ sub: 'late' });
      const config = await oidc.discovery(new URL(late.issuer), 'late-client', client.clientSecret, undefined, { execute: [oidc.allowInsecureRequests] });
      const pending = await startAuthorization(config);
      const tokens = await redeem(config, await late.signIn(pending.url.href, 'late'), pending);
      expect(tokens.claims()).to.include({ sub: 'late', aud: 'late-client' });
      expect(tokens.claims()).not.to.have.property('email');
    } finally {
      await late.close();
    }
    expect((await rejection(fetch(late.configUrl))).message).to.equal('fetch failed');
  });
});
