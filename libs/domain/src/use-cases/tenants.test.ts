import { expect } from 'chai';
import { HOW_TO_GET_A_DEVELOPER_TOKEN } from '../authorization.js';
import { failure } from './assertions.test-support.js';
import { FakeCredentials, FakeLoginRoles } from './credential-fakes.test-support.js';
import { fakePlatform, NOW } from './fakes.test-support.js';
import { createTenant, deleteTenant, getTenant, listTenants, renameTenant } from './tenants.js';

const sessionEnded = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'invalid_token', message: 'The session of this token has ended' };
const notForDatabase = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'invalid_token', message: 'The token is not valid for this database' };
const acmeNotFound = { name: 'NotFoundError', kind: 'not_found', code: 'workspace_not_found', message: "Workspace 'acme' not found" };

function tenantNotFound(id: string) {
  return { name: 'NotFoundError', kind: 'not_found', code: 'tenant_not_found', message: `Tenant '${id}' not found` };
}

describe('tenant use cases', () => {
  let p: ReturnType<typeof fakePlatform>;

  beforeEach(() => {
    p = fakePlatform();
  });

  describe('listTenants', () => {
    it('shows a developer of the workspace and its clients every tenant', async () => {
      const one = await p.tenant('One');
      const two = await p.tenant('Two');
      expect((await listTenants(p.deps, p.alice, 'acme', 'main')).items).to.deep.equal([one, two]);
      expect((await listTenants(p.deps, p.acmeClient, 'acme', 'main')).items).to.deep.equal([one, two]);
    });

    it('shows a user only the tenants they belong to', async () => {
      const mine = await p.tenant('Mine');
      await p.tenant('Theirs');
      const { caller } = await p.user('ada@example.com', 'password1', [mine]);
      expect((await listTenants(p.deps, caller, 'acme', 'main')).items).to.deep.equal([mine]);
    });

    it('answers a developer outside the workspace as if it did not exist', async () => {
      expect(await failure(listTenants(p.deps, p.mallory, 'acme', 'main'))).to.deep.equal(acmeNotFound);
    });

    it('answers a user token 401 for any other database, existing or not', async () => {
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(listTenants(p.deps, caller, 'globex', 'main'))).to.deep.equal(notForDatabase);
      expect(await failure(listTenants(p.deps, caller, 'acme', 'missing'))).to.deep.equal(notForDatabase);
    });

    it('refuses a database that is not READY yet (409)', async () => {
      expect(await failure(listTenants(p.deps, p.alice, 'acme', 'building'))).to.deep.equal({
        name: 'ConflictError',
        kind: 'conflict',
        code: 'database_not_ready',
        message: "Database 'building' is REQUESTED, not READY yet",
      });
    });

    it('answers 401 once the user’s session has ended', async () => {
      const { caller } = await p.user('ada@example.com', 'password1');
      await p.data.repositories.sessions.revoke(caller.sessionId);
      expect(await failure(listTenants(p.deps, caller, 'acme', 'main'))).to.deep.equal(sessionEnded);
    });
  });

  describe('createTenant', () => {
    it('creates a tenant with the trimmed name for a developer, who becomes no member', async () => {
      const tenant = await createTenant(p.deps, p.alice, 'acme', 'main', { name: '  Home  ' });
      expect(tenant).to.deep.equal({ id: tenant.id, name: 'Home', created: NOW, updated: NOW });
      expect(p.data.memberships.size).to.equal(0);
    });

    it('makes a user who creates a tenant its first member', async () => {
      const { user, caller } = await p.user('ada@example.com', 'password1');
      const tenant = await createTenant(p.deps, caller, 'acme', 'main', { name: 'Mine' });
      expect(await p.data.repositories.users.tenantIds(user.id)).to.deep.equal([tenant.id]);
    });

    it('lets a developer choose the id, and answers a taken one 409', async () => {
      const tenant = await createTenant(p.deps, p.alice, 'acme', 'main', { name: 'Chosen', id: 'tenant-chosen' });
      expect(tenant.id).to.equal('tenant-chosen');
      expect(await failure(createTenant(p.deps, p.alice, 'acme', 'main', { name: 'Again', id: 'tenant-chosen' }))).to.deep.equal({
        name: 'ConflictError',
        kind: 'conflict',
        code: 'tenant_id_taken',
        message: "A tenant with id 'tenant-chosen' already exists",
      });
    });

    it('refuses a user who chooses an id (403), so ids cannot be probed', async () => {
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(createTenant(p.deps, caller, 'acme', 'main', { name: 'Mine', id: 'tenant-chosen' }))).to.deep.equal({
        name: 'ForbiddenError',
        kind: 'forbidden',
        code: 'developer_token_required',
        message: `Only a developer can choose a tenant id. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`,
      });
      expect(p.data.tenants).to.deep.equal([]);
    });

    it('refuses a user whose session has ended, creating nothing', async () => {
      const { caller } = await p.user('ada@example.com', 'password1');
      await p.data.repositories.sessions.revoke(caller.sessionId);
      expect(await failure(createTenant(p.deps, caller, 'acme', 'main', { name: 'Mine' }))).to.deep.equal(sessionEnded);
      expect(p.data.tenants).to.deep.equal([]);
    });

    it('takes a name of 1 to 255 characters after trimming, and refuses anything else before any lookup', async () => {
      const invalid = { name: 'ValidationError', kind: 'validation', code: 'invalid_tenant_name', message: 'Tenant name must be 1 to 255 characters, not only spaces' };
      for (const name of ['', '   ', '\t\n', 'x'.repeat(256)]) {
        // A stranger's request: the name is refused before the workspace is looked up.
        expect(await failure(createTenant(p.deps, p.mallory, 'acme', 'main', { name })), JSON.stringify(name)).to.deep.equal(invalid);
      }
      expect((await createTenant(p.deps, p.alice, 'acme', 'main', { name: ` ${'x'.repeat(255)} ` })).name).to.equal('x'.repeat(255));
      expect((await createTenant(p.deps, p.alice, 'acme', 'main', { name: 'x' })).name).to.equal('x');
    });
  });

  describe('getTenant', () => {
    it('gives a developer, a client and a member the tenant', async () => {
      const tenant = await p.tenant('Home');
      const { caller } = await p.user('ada@example.com', 'password1', [tenant]);
      const path = { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id };
      for (const who of [p.alice, p.acmeClient, caller]) expect(await getTenant(p.deps, who, path)).to.deep.equal(tenant);
    });

    it('answers a user outside the tenant exactly as for a tenant that does not exist (404)', async () => {
      const tenant = await p.tenant('Home');
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(getTenant(p.deps, caller, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }))).to.deep.equal(tenantNotFound(tenant.id));
      expect(await failure(getTenant(p.deps, p.alice, { workspaceSlug: 'acme', databaseName: 'main', tenantId: 'tenant-none' }))).to.deep.equal(tenantNotFound('tenant-none'));
    });

    it('ends a member’s access as soon as the membership is removed or the session ends', async () => {
      const tenant = await p.tenant('Home');
      const path = { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id };
      const ada = await p.user('ada@example.com', 'password1', [tenant]);
      await p.data.repositories.users.unlink(tenant.id, ada.user.id);
      expect(await failure(getTenant(p.deps, ada.caller, path))).to.deep.equal(tenantNotFound(tenant.id));
      const bob = await p.user('bob@example.com', 'password1', [tenant]);
      await p.data.repositories.sessions.revoke(bob.caller.sessionId);
      expect(await failure(getTenant(p.deps, bob.caller, path))).to.deep.equal(sessionEnded);
    });

    it('answers a developer outside the workspace 404 for the workspace, before any tenant', async () => {
      const tenant = await p.tenant('Home');
      expect(await failure(getTenant(p.deps, p.mallory, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }))).to.deep.equal(acmeNotFound);
    });
  });

  describe('renameTenant', () => {
    it('lets a member rename their tenant, trimming the name', async () => {
      const tenant = await p.tenant('Old');
      const { caller } = await p.user('ada@example.com', 'password1', [tenant]);
      const renamed = await renameTenant(p.deps, caller, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }, ' New ');
      expect(renamed).to.deep.equal({ ...tenant, name: 'New' });
    });

    it('answers a user outside the tenant 404 and changes nothing', async () => {
      const tenant = await p.tenant('Old');
      const { caller } = await p.user('ada@example.com', 'password1');
      expect(await failure(renameTenant(p.deps, caller, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }, 'New'))).to.deep.equal(tenantNotFound(tenant.id));
      expect(p.data.tenants[0].name).to.equal('Old');
    });

    it('refuses a name of only spaces (400)', async () => {
      const tenant = await p.tenant('Old');
      expect(await failure(renameTenant(p.deps, p.alice, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }, ' '))).to.deep.equal({
        name: 'ValidationError',
        kind: 'validation',
        code: 'invalid_tenant_name',
        message: 'Tenant name must be 1 to 255 characters, not only spaces',
      });
    });
  });

  describe('deleteTenant', () => {
    let credentials: FakeCredentials;
    let loginRoles: FakeLoginRoles;
    let deps: ReturnType<typeof fakePlatform>['deps'] & { credentials: FakeCredentials; loginRoles: FakeLoginRoles; credentialsPerDatabase: number };
    beforeEach(() => {
      credentials = new FakeCredentials();
      loginRoles = new FakeLoginRoles();
      deps = { ...p.deps, credentials, loginRoles, credentialsPerDatabase: 50 };
    });

    it('lets a developer or a client of the workspace delete a tenant, which then does not exist', async () => {
      for (const who of [p.alice, p.acmeClient]) {
        const tenant = await p.tenant('Doomed');
        const path = { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id };
        await deleteTenant(deps, who, path);
        expect(await failure(getTenant(p.deps, p.alice, path))).to.deep.equal(tenantNotFound(tenant.id));
      }
    });

    it('drops the tenant’s scoped credentials first, and leaves every other credential', async () => {
      const [doomed, kept] = [await p.tenant('Doomed'), await p.tenant('Kept')];
      const credential = (id: string, tenantId: string | null, internal = false) =>
        credentials.rows.push({ id, databaseId: p.main.id, tenantId, internal, created: NOW, deleted: false });
      credential('cred_doomed', doomed.id);
      credential('cred_doomed_internal', doomed.id, true);
      credential('cred_kept', kept.id);
      credential('cred_unscoped', null);
      await deleteTenant(deps, p.alice, { workspaceSlug: 'acme', databaseName: 'main', tenantId: doomed.id });
      expect(loginRoles.calls).to.deep.equal(['drop main cred_doomed', 'drop main cred_doomed_internal']);
      expect(credentials.rows.filter((row) => !row.deleted).map((row) => row.id)).to.deep.equal(['cred_kept', 'cred_unscoped']);
    });

    it('refuses a member (403) and answers a user outside the tenant 404, dropping nothing', async () => {
      const tenant = await p.tenant('Kept');
      const path = { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id };
      credentials.rows.push({ id: 'cred_kept', databaseId: p.main.id, tenantId: tenant.id, internal: false, created: NOW, deleted: false });
      const member = await p.user('ada@example.com', 'password1', [tenant]);
      const stranger = await p.user('eve@example.com', 'password1');
      expect(await failure(deleteTenant(deps, member.caller, path))).to.deep.equal({
        name: 'ForbiddenError',
        kind: 'forbidden',
        code: 'developer_token_required',
        message: `Only a developer can delete a tenant. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`,
      });
      expect(await failure(deleteTenant(deps, stranger.caller, path))).to.deep.equal(tenantNotFound(tenant.id));
      expect(await getTenant(p.deps, p.alice, path)).to.deep.equal(tenant);
      expect(loginRoles.calls).to.deep.equal([]);
    });
  });
});
