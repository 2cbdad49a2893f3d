import { expect } from 'chai';
import * as oidc from 'openid-client';
import { eventually } from '@platform/testing';
import { developerWithWorkspace, expectApiError, type AppProcess } from '@platform/test-fixtures';
import { OTHER_ISSUER, platform, startApiProcess, type TestPlatform } from './support/platform.js';
import { basic, tokenRequest } from './support/oauth-requests.js';

/**
 * The token service on the shared control plane, driven by a client library written elsewhere
 * (openid-client); the tokens it issues are used on an API (its own process) that trusts it.
 */
describe('OAuth clients and the client_credentials grant', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let issuer: string;
  /** An API on the same control plane that trusts another issuer. */
  let otherApi: AppProcess;

  before(async function () {
    p = await platform();
    issuer = p.issuer;
    otherApi = await startApiProcess(p.controlPlane, OTHER_ISSUER);
  });

  after(async function () {
    await otherApi?.stop();
  });

  async function register(owner: { token: string; slug: string }, body: object) {
    return p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token, json: body });
  }

  async function confidentialClient() {
    const owner = await developerWithWorkspace(p);
    const created = await register(owner, { name: 'Deploy bot', type: 'confidential' });
    expect(created.status, created.text).to.equal(201);
    return { owner, clientId: created.body.client_id as string, secret: created.body.client_secret as string };
  }

  it('registers a confidential client whose secret is shown once and listed never', async function () {
    const { owner, clientId, secret } = await confidentialClient();
    expect(clientId).to.match(/^cli_[A-Za-z0-9_-]{16}$/);
    expect(secret).to.match(/^[A-Za-z0-9_-]{43}$/);
    const listed = await p.request('GET', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token });
    expect(listed.body).to.have.length(1);
    expect(listed.body[0]).to.include({ client_id: clientId, type: 'confidential' });
    expect(listed.body[0]).not.to.have.property('client_secret');
    expect(listed.text).not.to.include(secret);
  });

  it('gets a token with openid-client (discovery + client_credentials) that works on the API for that workspace only', async function () {
    const { owner, clientId, secret } = await confidentialClient();
    const other = await developerWithWorkspace(p);
    for (const auth of [oidc.ClientSecretBasic(secret), oidc.ClientSecretPost(secret)]) {
      const config = await oidc.discovery(new URL(issuer), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
      expect(config.serverMetadata().token_endpoint).to.equal(`${issuer}/oauth2/token`);
      const tokens = await oidc.clientCredentialsGrant(config);
      expect(tokens.token_type.toLowerCase()).to.equal('bearer');
      expect(tokens.expires_in).to.equal(3600);
      const bearer = tokens.access_token;

      expect((await p.request('GET', '/workspaces', { token: bearer })).body.map((w: { slug: string }) => w.slug)).to.deep.equal([owner.slug]);
      expect((await p.request('GET', `/workspaces/${owner.slug}`, { token: bearer })).status).to.equal(200);
      expectApiError(await p.request('GET', `/workspaces/${other.slug}`, { token: bearer }), 404, 'workspace_not_found');
      // What only people may do.
      expectApiError(await p.request('POST', '/workspaces', { token: bearer, json: { name: 'By a bot' } }), 403, 'developer_token_required');
      expectApiError(await p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: bearer, json: { name: 'x', type: 'public' } }), 403, 'developer_token_required');
      // An API that trusts another issuer: the token is not valid there.
      expectApiError(await otherApi.request('GET', `/workspaces/${owner.slug}`, { token: bearer }), 401, 'invalid_token');
    }
    const created = await p.request('POST', `/workspaces/${owner.slug}/databases`, {
      token: (await oidc.clientCredentialsGrant(await oidc.discovery(new URL(issuer), clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] }))).access_token,
      json: { databaseName: 'made_by_a_bot', region: 'AWS_US_WEST_2' },
    });
    expect(created.status, created.text).to.equal(201);
  });

  it('answers RFC 6749 errors with no-store, and never a token for bad credentials', async function () {
    const { clientId, secret } = await confidentialClient();
    const cases: [string, ReturnType<typeof tokenRequest>, number, string][] = [
      ['a wrong secret (Basic)', tokenRequest({ grant_type: 'client_credentials' }, basic(clientId, 'x'.repeat(43))), 401, 'invalid_client'],
      ['a wrong secret (form)', tokenRequest({ grant_type: 'client_credentials', client_id: clientId, client_secret: 'nope' }), 401, 'invalid_client'],
      ['an unknown client', tokenRequest({ grant_type: 'client_credentials', client_id: 'cli_unknown', client_secret: secret }), 401, 'invalid_client'],
      ['no client authentication', tokenRequest({ grant_type: 'client_credentials' }), 401, 'invalid_client'],
      ['two authentication methods', tokenRequest({ grant_type: 'client_credentials', client_secret: secret }, basic(clientId, secret)), 400, 'invalid_request'],
      ['no grant_type', tokenRequest({}, basic(clientId, secret)), 400, 'invalid_request'],
      ['an unknown grant_type', tokenRequest({ grant_type: 'password', username: 'a', password: 'b' }, basic(clientId, secret)), 400, 'unsupported_grant_type'],
      ['a scope that does not exist', tokenRequest({ grant_type: 'client_credentials', scope: 'admin' }, basic(clientId, secret)), 400, 'invalid_scope'],
      ['a repeated grant_type', p.oauth('POST', '/oauth2/token', { raw: 'grant_type=client_credentials&grant_type=client_credentials', contentType: 'application/x-www-form-urlencoded', headers: basic(clientId, secret) }), 400, 'invalid_request'],
      ['a JSON body', p.oauth('POST', '/oauth2/token', { json: { grant_type: 'client_credentials' }, headers: basic(clientId, secret) }), 400, 'invalid_request'],
    ];
    for (const [what, pending, status, error] of cases) {
      const response = await pending;
      expect(response.status, what).to.equal(status);
      expect(response.body, what).to.have.keys('error', 'error_description');
      expect(response.body.error, what).to.equal(error);
      expect(response.headers.get('cache-control'), what).to.equal('no-store');
    }
    const basicFailure = await tokenRequest({ grant_type: 'client_credentials' }, basic(clientId, 'wrong'));
    expect(basicFailure.headers.get('www-authenticate')).to.match(/^Basic /);
    const ok = await tokenRequest({ grant_type: 'client_credentials' }, basic(clientId, secret));
    expect(ok.status).to.equal(200);
    expect(ok.headers.get('cache-control')).to.equal('no-store');
  });

  /**
   * The API's commit reaches the token service's client cache through a notification: at once, but
   * not synchronously with the API's answer, so a refusal is awaited (well inside OAUTH_CLIENT_CACHE_MS).
   */
  async function refusedSoon(clientId: string, secret: string) {
    return eventually(
      async () => {
        const response = await tokenRequest({ grant_type: 'client_credentials' }, basic(clientId, secret));
        return response.status === 200 ? undefined : response;
      },
      2_000,
      `client ${clientId}'s old credentials to be refused`,
    );
  }

  it('stops accepting a secret once rotated, and a client once deleted', async function () {
    const { owner, clientId, secret } = await confidentialClient();
    const rotated = await p.request('POST', `/workspaces/${owner.slug}/oauth-clients/${clientId}/secret`, { token: owner.token });
    expect(rotated.status, rotated.text).to.equal(200);
    const fresh = rotated.body.client_secret as string;
    expect(fresh).to.not.equal(secret);
    expect((await refusedSoon(clientId, secret)).body.error).to.equal('invalid_client');
    const issued = await tokenRequest({ grant_type: 'client_credentials' }, basic(clientId, fresh));
    expect(issued.status).to.equal(200);
    expect((await p.request('GET', `/workspaces/${owner.slug}`, { token: issued.body.access_token })).status).to.equal(200);
    expect((await p.request('DELETE', `/workspaces/${owner.slug}/oauth-clients/${clientId}`, { token: owner.token })).status).to.equal(204);
    const refused = await refusedSoon(clientId, fresh);
    expect(refused.status).to.equal(401);
    expect(refused.body.error).to.equal('invalid_client');
    // Tokens it already had reach nothing from then on: the API reads the client with its workspace,
    // and a token whose client is gone is no credential (401), not a sign the workspace is (404).
    const deletedClient = { errorCode: 'invalid_token', message: 'The OAuth client of this token has been deleted', statusCode: 401 };
    const read = await p.request('GET', `/workspaces/${owner.slug}`, { token: issued.body.access_token });
    expect(read.status).to.equal(401);
    expect(read.body).to.deep.equal(deletedClient);
    expect(read.headers.get('www-authenticate')).to.equal('Bearer error="invalid_token"');
    const create = await p.request('POST', `/workspaces/${owner.slug}/databases`, {
      token: issued.body.access_token,
      json: { databaseName: 'after_delete', region: 'AWS_US_WEST_2' },
    });
    expect([create.status, create.body]).to.deep.equal([401, deletedClient]);
    const list = await p.request('GET', '/workspaces', { token: issued.body.access_token });
    expect([list.status, list.body]).to.deep.equal([401, deletedClient]);
    expect((await p.request('GET', `/workspaces/${owner.slug}/databases`, { token: owner.token })).body).to.deep.equal([]);
    expectApiError(await p.request('DELETE', `/workspaces/${owner.slug}/oauth-clients/${clientId}`, { token: owner.token }), 404, 'client_not_found');
  });

  it('registers public clients with loopback redirect URIs only, and never lets them use client_credentials', async function () {
    const owner = await developerWithWorkspace(p);
    expectApiError(await register(owner, { name: 'CLI', type: 'public', redirect_uris: ['https://example.com/cb'] }), 400, 'invalid_redirect_uri');
    expectApiError(await register(owner, { name: 'Web', type: 'confidential', redirect_uris: ['http://example.com/cb'] }), 400, 'invalid_redirect_uri');
    expectApiError(await register(owner, { name: 'Web', type: 'confidential', redirect_uris: ['https://example.com/cb#frag'] }), 400, 'invalid_redirect_uri');
    expectApiError(await register(owner, { name: 'Bad', type: 'hybrid' }), 400, 'validation_failed');
    const cli = await register(owner, { name: 'CLI', type: 'public', redirect_uris: ['http://127.0.0.1:8765/callback', 'http://[::1]/cb'] });
    expect(cli.status, cli.text).to.equal(201);
    expect(cli.body).not.to.have.property('client_secret');
    const refused = await tokenRequest({ grant_type: 'client_credentials', client_id: cli.body.client_id });
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.equal('unauthorized_client');
    expectApiError(await p.request('POST', `/workspaces/${owner.slug}/oauth-clients/${cli.body.client_id}/secret`, { token: owner.token }), 400, 'public_client');
    // Another developer sees none of it.
    const stranger = await p.controlPlane.newDeveloper();
    expectApiError(await p.request('GET', `/workspaces/${owner.slug}/oauth-clients`, { token: stranger.token }), 404, 'workspace_not_found');
  });

  it('publishes RFC 8414 metadata that says what the service does', async function () {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const { status, body } = await p.oauth('GET', path);
      expect(status).to.equal(200);
      expect(body).to.include({ issuer, token_endpoint: `${issuer}/oauth2/token`, jwks_uri: `${issuer}/.well-known/jwks.json` });
      expect(body.grant_types_supported).to.have.members(['authorization_code', 'refresh_token', 'client_credentials']);
    }
  });
});
