import { expect } from 'chai';
import * as oidc from 'openid-client';
import { rejection } from '@platform/testing';
import { developerWithWorkspace, expectApiError, signInAt, signUpDeveloper } from '@platform/test-fixtures';
import { platform, type TestPlatform } from './support/platform.js';

/**
 * The authorization_code grant with PKCE, refresh and revocation, driven end to end by a client
 * library written elsewhere (openid-client) against the token service; the tokens it gets are
 * used on an API (its own process) that trusts that token service.
 */
describe('OAuth authorization code, refresh and revocation (openid-client)', function () {
  this.timeout(60_000);
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  async function cliConfig() {
    return oidc.discovery(new URL(p.issuer), 'platform-cli', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  }

  /** The whole front-channel dance, as a command-line tool does it: PKCE, state, sign-in, callback. */
  async function authorize(config: oidc.Configuration, credentials: { email: string; password: string }, extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...extra,
    });
    const signedIn = await signInAt(url.toString(), credentials);
    expect(signedIn.status, signedIn.html.slice(0, 500)).to.equal(303);
    const callback = new URL(signedIn.location!);
    expect(callback.origin + callback.pathname).to.equal(redirectUri);
    return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, { redirect_uri: redirectUri });
  }

  it('publishes metadata for every grant it serves', async function () {
    const config = await cliConfig();
    const metadata = config.serverMetadata();
    expect(metadata.grant_types_supported).to.have.members(['authorization_code', 'refresh_token', 'client_credentials']);
    expect(metadata.code_challenge_methods_supported).to.deep.equal(['S256']);
    expect(metadata.authorization_endpoint).to.equal(`${p.issuer}/oauth2/authorize`);
    expect(metadata.revocation_endpoint).to.equal(`${p.issuer}/oauth2/revoke`);
    expect(metadata.introspection_endpoint).to.equal(`${p.issuer}/oauth2/introspect`);
  });

  it('signs a developer in with the first-party CLI client, and the token works on the API', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const config = await cliConfig();
    const tokens = await authorize(config, credentials);
    expect(tokens.token_type.toLowerCase()).to.equal('bearer');
    expect(tokens.refresh_token).to.be.a('string');
    expect(tokens.scope).to.equal('api:read api:write');

    const created = await p.request('POST', '/workspaces', { token: tokens.access_token, json: { name: 'Signed in' } });
    expect(created.status, created.text).to.equal(201);
    const listed = await p.request('GET', '/workspaces', { token: tokens.access_token });
    expect(listed.body.map((w: { slug: string }) => w.slug)).to.deep.equal([created.body.slug]);
  });

  it('rotates refresh tokens, narrows scope, and revokes the family', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const config = await cliConfig();
    const first = await authorize(config, credentials);
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).to.be.a('string').and.not.equal(first.refresh_token);
    expect(second.access_token).to.not.equal(first.access_token);

    const narrowed = await oidc.refreshTokenGrant(config, second.refresh_token!, { scope: 'api:read' });
    expect(narrowed.scope).to.equal('api:read');
    expect((await p.request('GET', '/workspaces', { token: narrowed.access_token })).status).to.equal(200);
    expectApiError(await p.request('POST', '/workspaces', { token: narrowed.access_token, json: { name: 'x' } }), 403, 'insufficient_scope');
    // Narrowed stays narrowed: asking for more is refused.
    const widened = await rejection(oidc.refreshTokenGrant(config, narrowed.refresh_token!, { scope: 'api:read api:write' }));
    expect(widened).to.be.instanceOf(oidc.ResponseBodyError);
    expect((widened as oidc.ResponseBodyError).error).to.equal('invalid_scope');

    // Revoking the refresh token ends the family: the refresh token at once, access tokens on the API within the poll bound.
    await oidc.tokenRevocation(config, narrowed.refresh_token!);
    const refused = await rejection(oidc.refreshTokenGrant(config, narrowed.refresh_token!));
    expect((refused as oidc.ResponseBodyError).error).to.equal('invalid_grant');
    const started = Date.now();
    for (;;) {
      const response = await p.request('GET', '/workspaces', { token: narrowed.access_token });
      if (response.status === 401) break;
      expect(Date.now() - started, 'revocation reaches the API within the poll bound').to.be.below(3_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('revokes a family through one of its access tokens', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    const config = await cliConfig();
    const tokens = await authorize(config, credentials);
    expect((await p.request('GET', '/workspaces', { token: tokens.access_token })).status).to.equal(200);
    await oidc.tokenRevocation(config, tokens.access_token, { token_type_hint: 'access_token' });
    const refused = await rejection(oidc.refreshTokenGrant(config, tokens.refresh_token!));
    expect((refused as oidc.ResponseBodyError).error).to.equal('invalid_grant');
  });

  it('lets a workspace client act for a member in that workspace only, and introspects its own tokens', async function () {
    const credentials = await signUpDeveloper(p.issuer);
    // The developer makes a workspace and a confidential client with a loopback redirect URI.
    const config0 = await cliConfig();
    const own = await authorize(config0, credentials);
    const ws = await p.request('POST', '/workspaces', { token: own.access_token, json: { name: 'Client home' } });
    const other = await p.request('POST', '/workspaces', { token: own.access_token, json: { name: 'Elsewhere' } });
    const registered = await p.request('POST', `/workspaces/${ws.body.slug}/oauth-clients`, {
      token: own.access_token,
      json: { name: 'Dashboard', type: 'confidential', redirect_uris: ['http://127.0.0.1/callback'] },
    });
    expect(registered.status, registered.text).to.equal(201);
    const config = await oidc.discovery(new URL(p.issuer), registered.body.client_id, undefined, oidc.ClientSecretBasic(registered.body.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await authorize(config, credentials);
    const seen = await p.request('GET', '/workspaces', { token: tokens.access_token });
    expect(seen.body.map((w: { slug: string }) => w.slug)).to.deep.equal([ws.body.slug]);
    expectApiError(await p.request('GET', `/workspaces/${other.body.slug}`, { token: tokens.access_token }), 404, 'workspace_not_found');

    const active = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(active).to.include({ active: true, client_id: registered.body.client_id, scope: 'api:read api:write' });
    const refresh = await oidc.tokenIntrospection(config, tokens.refresh_token!);
    expect(refresh).to.include({ active: true, token_type: 'refresh_token' });
    // Another client's token is not this client's business.
    expect(await oidc.tokenIntrospection(config, own.access_token)).to.deep.equal({ active: false });

    // A developer outside the workspace is sent back with access_denied.
    const outsider = await signUpDeveloper(p.issuer);
    const denied = await rejection(authorize(config, outsider));
    expect(denied).to.be.instanceOf(oidc.AuthorizationResponseError);
    expect((denied as oidc.AuthorizationResponseError).error).to.equal('access_denied');
  });

  it('still serves client_credentials to workspace clients', async function () {
    const owner = await developerWithWorkspace(p);
    const created = await p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token, json: { name: 'Bot', type: 'confidential' } });
    const config = await oidc.discovery(new URL(p.issuer), created.body.client_id, undefined, oidc.ClientSecretPost(created.body.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api:read' });
    expect(tokens.scope).to.equal('api:read');
    expect(tokens).not.to.have.property('refresh_token');
    expect((await p.request('GET', `/workspaces/${owner.slug}`, { token: tokens.access_token })).status).to.equal(200);
  });
});
