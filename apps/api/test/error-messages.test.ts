// Answers that say what to do (issue 31): a refused enum lists its values, a refused email or name
// states the rule in words (never a regular expression), developer_token_required says how to get
// a developer token. Exact bodies, over HTTP.
import { expect } from 'chai';
import { issueClientToken } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { developerWithWorkspace } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase, TEST_PASSWORD } from './support/fixtures.js';

const HOW_TO_GET_ONE =
  'A developer gets one by signing in through the token service (authorization code with PKCE at /oauth2/authorize, ' +
  'client platform-cli); on a local platform `npm run login` prints one';

function invalid(message: string) {
  return { errorCode: 'validation_failed', message: `Invalid request: ${message}`, statusCode: 400 };
}

describe('error messages that say what to do', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  describe('validation', function () {
    it('lists the regions when the region is not one of them', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const answer = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: 'orders', region: 'MARS_1' } });
      expect([answer.status, answer.body]).to.deep.equal([400, invalid('body.region: must be one of AWS_US_WEST_2, AWS_EU_CENTRAL_1, AZURE_EASTUS')]);
    });

    it('lists the values of every other enum: a member’s role, an invitation’s role, a client’s type', async function () {
      const { token, slug, developer } = await developerWithWorkspace(p);
      const role = await p.request('PATCH', `/workspaces/${slug}/members/${developer.id}`, { token, json: { role: 'admin' } });
      expect([role.status, role.body]).to.deep.equal([400, invalid('body.role: must be one of owner, member')]);
      const invited = await p.request('POST', `/workspaces/${slug}/invitations`, { token, json: { email: 'bob@example.test', role: 'owner' } });
      expect([invited.status, invited.body]).to.deep.equal([400, invalid('body.role: must be one of member')]);
      const client = await p.request('POST', `/workspaces/${slug}/oauth-clients`, { token, json: { name: 'Bot', type: 'hybrid' } });
      expect([client.status, client.body]).to.deep.equal([400, invalid('body.type: must be one of confidential, public')]);
    });

    it('says what an email must look like, without a regular expression', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const rule = 'must be an email address such as ada@example.com: one @, no spaces, at most 64 characters before the @';
      for (const email of ['nobody.example.test', 'a b@example.test', `${'l'.repeat(65)}@example.test`]) {
        const answer = await p.request('POST', `/workspaces/${slug}/invitations`, { token, json: { email } });
        expect([answer.status, answer.body]).to.deep.equal([400, invalid(`body.email: ${rule}`)]);
      }
      const owner = await developerWithReadyDatabase(p);
      const tenant = await createTenant(p, owner.token, owner.D);
      const signUp = await p.request('POST', `${owner.D}/tenants/${tenant.id}/users`, { token: owner.token, json: { email: '@example.test', password: TEST_PASSWORD } });
      expect([signUp.status, signUp.body]).to.deep.equal([400, invalid(`body.email: ${rule}`)]);
    });

    it('says what a database name and a workspace slug must be made of', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: 'my-db', region: 'AWS_US_WEST_2' } });
      expect([name.status, name.body]).to.deep.equal([400, invalid('body.databaseName: must be letters, digits and underscores, starting with a letter or underscore')]);
      const workspace = await p.request('POST', '/workspaces', { token, json: { name: 'Acme', slug: 'Acme_Corp' } });
      expect([workspace.status, workspace.body]).to.deep.equal([
        400,
        invalid('body.slug: must be lower-case letters, digits and single hyphens, starting with a letter'),
      ]);
    });
  });

  describe('403 developer_token_required', function () {
    it('tells a workspace client how a developer gets a token', async function () {
      const owner = await developerWithWorkspace(p);
      const registered = await p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token, json: { name: 'Bot', type: 'confidential' } });
      expect(registered.status, registered.text).to.equal(201);
      const { token } = await issueClientToken(
        p.controlPlane.keys,
        { issuer: TEST_ISSUER, audience: TEST_AUDIENCE, clock: systemClock },
        { clientId: registered.body.client_id, workspaceId: owner.workspace.id, scopes: ['api:read', 'api:write'], ttlSeconds: 600 },
      );
      const answer = await p.request('POST', '/workspaces', { token, json: { name: 'More' } });
      expect([answer.status, answer.body]).to.deep.equal([
        403,
        {
          errorCode: 'developer_token_required',
          message: `This operation needs a developer token, not a workspace client's or a user's. ${HOW_TO_GET_ONE}`,
          statusCode: 403,
        },
      ]);
    });

    it('tells a user how a developer gets a token', async function () {
      const owner = await developerWithReadyDatabase(p);
      const tenant = await createTenant(p, owner.token, owner.D);
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
      const answer = await p.request('GET', `${owner.D}/credentials`, { token: user.jwt });
      expect([answer.status, answer.body]).to.deep.equal([
        403,
        {
          errorCode: 'developer_token_required',
          message: `This operation needs a developer token or a workspace client’s, not a user’s. ${HOW_TO_GET_ONE}`,
          statusCode: 403,
        },
      ]);
    });
  });
});
