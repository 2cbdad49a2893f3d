import { expect } from 'chai';
import { HOW_TO_GET_A_DEVELOPER_TOKEN } from '../authorization.js';
import { createCredential, deleteCredential, listCredentials } from './credentials.js';
import { failure, rejection } from './assertions.test-support.js';
import { FakeCredentials, FakeLoginRoles } from './credential-fakes.test-support.js';
import { fakePlatform, NOW } from './fakes.test-support.js';

const MAIN = { workspaceSlug: 'acme', databaseName: 'main' };
const developerTokenRequired = { name: 'ForbiddenError', kind: 'forbidden', code: 'developer_token_required', message: `This operation needs a developer token or a workspace client’s, not a user’s. ${HOW_TO_GET_A_DEVELOPER_TOKEN}` };

describe('credential use cases', () => {
  let p: ReturnType<typeof fakePlatform>;
  let credentials: FakeCredentials;
  let loginRoles: FakeLoginRoles;
  let deps: ReturnType<typeof fakePlatform>['deps'] & { credentials: FakeCredentials; loginRoles: FakeLoginRoles; credentialsPerDatabase: number };

  beforeEach(() => {
    p = fakePlatform();
    credentials = new FakeCredentials();
    loginRoles = new FakeLoginRoles();
    deps = { ...p.deps, credentials, loginRoles, credentialsPerDatabase: 50 };
  });

  describe('createCredential', () => {
    it('creates a role with a fresh 256-bit password, records it, and answers the password once', async () => {
      const created = await createCredential(deps, p.alice, MAIN, {});
      expect(created.password).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(created.database).to.equal(p.main);
      expect(created.credential).to.deep.equal({ id: 'cred_1', databaseId: p.main.id, tenantId: null, internal: false, created: NOW });
      expect(loginRoles.roles.get('cred_1')).to.deep.equal({ password: created.password, tenantId: null });
      expect(credentials.rows.map((row) => row.id)).to.deep.equal(['cred_1']);
      const second = await createCredential(deps, p.acmeClient, MAIN, {});
      expect(second.password).not.to.equal(created.password);
    });

    it('scopes the role to a tenant of the database', async () => {
      const tenant = await p.tenant('Acme');
      const created = await createCredential(deps, p.alice, MAIN, { tenantId: tenant.id });
      expect(created.credential.tenantId).to.equal(tenant.id);
      expect(loginRoles.roles.get(created.credential.id)?.tenantId).to.equal(tenant.id);
    });

    it('answers 404 tenant_not_found for a tenant the database does not have, and creates no role', async () => {
      expect(await failure(createCredential(deps, p.alice, MAIN, { tenantId: 'tenant-9' }))).to.deep.equal({
        name: 'NotFoundError',
        kind: 'not_found',
        code: 'tenant_not_found',
        message: "Tenant 'tenant-9' not found",
      });
      expect(loginRoles.calls).to.deep.equal([]);
    });

    it('answers 409 credential_quota_exceeded at the quota and creates no role; concurrent creates at it do not both pass', async () => {
      deps.credentialsPerDatabase = 2;
      await createCredential(deps, p.alice, MAIN, {});
      await credentials.create({ id: 'cred_internal', databaseId: p.main.id, tenantId: null, internal: true });
      const outcomes = await Promise.allSettled([createCredential(deps, p.alice, MAIN, {}), createCredential(deps, p.alice, MAIN, {})]);
      expect(outcomes.map((outcome) => outcome.status)).to.have.members(['fulfilled', 'rejected']);
      const quota = {
        name: 'ConflictError',
        kind: 'conflict',
        code: 'credential_quota_exceeded',
        message: "Database 'main' has 2 credentials, its quota is 2; delete one first",
      };
      expect(await failure(createCredential(deps, p.alice, MAIN, {}))).to.deep.equal(quota);
      expect(loginRoles.calls).to.deep.equal(['create main cred_1', 'create main cred_2']);
      // The platform's own credentials do not count, and a deleted one frees its place.
      await deleteCredential(deps, p.alice, MAIN, 'cred_1');
      expect((await createCredential(deps, p.alice, MAIN, {})).credential.id).to.equal('cred_3');
    });

    it('refuses a database that is not READY (409), a stranger (404) and a user token (403)', async () => {
      expect(await failure(createCredential(deps, p.alice, { workspaceSlug: 'acme', databaseName: 'building' }, {}))).to.deep.equal({
        name: 'ConflictError',
        kind: 'conflict',
        code: 'database_not_ready',
        message: "Database 'building' is REQUESTED, not READY yet",
      });
      expect(await failure(createCredential(deps, p.mallory, MAIN, {}))).to.deep.equal({
        name: 'NotFoundError',
        kind: 'not_found',
        code: 'workspace_not_found',
        message: "Workspace 'acme' not found",
      });
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(createCredential(deps, caller, MAIN, {}))).to.deep.equal(developerTokenRequired);
      expect(loginRoles.calls).to.deep.equal([]);
    });

    it('drops the role again when it cannot be recorded', async () => {
      credentials.failNextCreate = true;
      const thrown = await rejection(createCredential(deps, p.alice, MAIN, {}));
      expect((thrown as Error).message).to.equal('control plane unreachable');
      expect(loginRoles.calls).to.deep.equal(['create main cred_1', 'drop main cred_1']);
      expect(loginRoles.roles.size).to.equal(0);
    });
  });

  describe('listCredentials', () => {
    it('lists the database’s live credentials, filtered by tenant and by internal', async () => {
      const tenant = await p.tenant('Acme');
      const open = (await createCredential(deps, p.alice, MAIN, {})).credential;
      const scoped = (await createCredential(deps, p.alice, MAIN, { tenantId: tenant.id })).credential;
      credentials.rows.push({ id: 'cred_internal', databaseId: p.main.id, tenantId: null, internal: true, created: NOW, deleted: false });
      expect(await listCredentials(deps, p.alice, MAIN, { internal: false })).to.deep.equal({ database: p.main, credentials: [open, scoped] });
      expect((await listCredentials(deps, p.acmeClient, MAIN, { internal: false, tenantId: tenant.id })).credentials).to.deep.equal([scoped]);
      expect((await listCredentials(deps, p.alice, MAIN, { internal: true })).credentials.map((row) => row.id)).to.deep.equal(['cred_internal']);
    });

    it('refuses a user token (403) and a stranger (404)', async () => {
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(listCredentials(deps, caller, MAIN, { internal: false }))).to.deep.equal(developerTokenRequired);
      expect((await failure(listCredentials(deps, p.mallory, MAIN, { internal: false }))).code).to.equal('workspace_not_found');
    });
  });

  describe('deleteCredential', () => {
    it('drops the role, then forgets the credential', async () => {
      const { credential } = await createCredential(deps, p.alice, MAIN, {});
      await deleteCredential(deps, p.alice, MAIN, credential.id);
      expect(loginRoles.calls).to.deep.equal(['create main cred_1', 'drop main cred_1']);
      expect((await listCredentials(deps, p.alice, MAIN, { internal: false })).credentials).to.deep.equal([]);
    });

    it('answers 404 credential_not_found for an unknown one, a deleted one and another database’s', async () => {
      const { credential } = await createCredential(deps, p.alice, MAIN, {});
      const notFound = (id: string) => ({ name: 'NotFoundError', kind: 'not_found', code: 'credential_not_found', message: `Credential '${id}' not found` });
      const other = p.deps.databases.add(p.main.workspace, 'other');
      expect(await failure(deleteCredential(deps, p.alice, { workspaceSlug: 'acme', databaseName: other.name }, credential.id))).to.deep.equal(notFound(credential.id));
      expect(await failure(deleteCredential(deps, p.alice, MAIN, 'cred_missing'))).to.deep.equal(notFound('cred_missing'));
      await deleteCredential(deps, p.alice, MAIN, credential.id);
      expect(await failure(deleteCredential(deps, p.alice, MAIN, credential.id))).to.deep.equal(notFound(credential.id));
      expect(loginRoles.calls).to.deep.equal(['create main cred_1', 'drop main cred_1']);
    });

    it('refuses a user token with 403 and drops nothing', async () => {
      const { credential } = await createCredential(deps, p.alice, MAIN, {});
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(deleteCredential(deps, caller, MAIN, credential.id))).to.deep.equal(developerTokenRequired);
      expect(loginRoles.roles.has(credential.id)).to.equal(true);
    });
  });
});
