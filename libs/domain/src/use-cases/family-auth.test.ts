import { expect } from 'chai';
import { failure } from './assertions.test-support.js';
import { FakeCredentials, FakeLoginRoles } from './credential-fakes.test-support.js';
import { deleteSelf, familySignUp, findFamilySession, requireFamilySession } from './family-auth.js';
import { fakePlatform } from './fakes.test-support.js';
import { deleteTenant } from './tenants.js';
import { linkUser, unlinkUser } from './users.js';

describe('the API family’s auth API use cases', () => {
  it('refuses self sign-up unless the platform allows it, and joining an existing tenant by id always', async () => {
    const p = fakePlatform();
    const home = await p.tenant('Home');
    expect(await failure(familySignUp(p.deps, p.main.id, { email: 'new@example.com', password: 'password-new' }))).to.include({ code: 'sign_up_disabled', kind: 'forbidden' });
    const open = { ...p.deps, selfSignUp: true };
    expect(await failure(familySignUp(open, p.main.id, { email: 'new@example.com', password: 'password-new', tenantId: home.id }))).to.include({ code: 'tenant_join_refused' });
    expect(await p.data.repositories.users.findByEmail('new@example.com')).to.equal(null);
    expect(await failure(familySignUp(open, p.main.id, { email: 'new@example.com', password: 'short' }))).to.include({ code: 'invalid_password' });
    expect(await failure(familySignUp(open, p.building.id, { email: 'new@example.com', password: 'password-new' }))).to.include({ code: 'database_not_found' });
  });

  it('signs a new user up, with a new tenant they are the first member of, and signs them in', async () => {
    const p = fakePlatform();
    const open = { ...p.deps, selfSignUp: true };
    const { user, tenantIds, result } = await familySignUp(open, p.main.id, { email: 'new@example.com', password: 'password-new', name: 'New', newTenantName: ' Acme ' });
    expect(user).to.include({ email: 'new@example.com', name: 'New' });
    expect(tenantIds).to.have.length(1);
    expect((await p.data.repositories.tenants.find(tenantIds[0]))?.name).to.equal('Acme');
    expect(await p.data.repositories.users.tenantIds(user.id)).to.deep.equal(tenantIds);
    const session = await requireFamilySession(p.deps, p.main.id, result?.session.token);
    expect(session.caller).to.include({ kind: 'user', userId: user.id, databaseId: p.main.id });
    // Without signing in, nobody holds a session.
    const quiet = await familySignUp(open, p.main.id, { email: 'quiet@example.com', password: 'password-quiet' }, { signIn: false });
    expect(quiet.result).to.equal(null);
    expect(quiet.tenantIds).to.deep.equal([]);
  });

  it('finds a session only in its own database', async () => {
    const p = fakePlatform();
    const ada = await p.user('ada@example.com', 'password-ada');
    expect((await findFamilySession(p.deps, p.main.id, ada.cookie))?.user.id).to.equal(ada.user.id);
    expect(await findFamilySession(p.deps, p.globexMain.id, ada.cookie)).to.equal(null);
    expect(await findFamilySession(p.deps, p.main.id, undefined)).to.equal(null);
    expect(await failure(requireFamilySession(p.deps, p.globexMain.id, ada.cookie))).to.include({ code: 'invalid_session', kind: 'unauthenticated' });
  });

  it('deletes the signed-in user: memberships gone, sessions ended', async () => {
    const p = fakePlatform();
    const home = await p.tenant('Home');
    const ada = await p.user('ada@example.com', 'password-ada', [home]);
    const session = await requireFamilySession(p.deps, p.main.id, ada.cookie);
    await deleteSelf(p.deps, session);
    expect(await findFamilySession(p.deps, p.main.id, ada.cookie)).to.equal(null);
    expect(await p.data.repositories.users.find(ada.user.id)).to.equal(null);
    expect(await failure(deleteSelf(p.deps, session))).to.include({ code: 'invalid_token' });
  });

  it('lets members delete tenants, and add and remove others, only where the platform says so', async () => {
    const p = fakePlatform();
    const home = await p.tenant('Home');
    const ada = await p.user('ada@example.com', 'password-ada', [home]);
    const bob = await p.user('bob@example.com', 'password-bob');
    const inHome = { workspaceSlug: 'acme', databaseName: 'main', tenantId: home.id };
    const deps = { ...p.deps, credentials: new FakeCredentials(), loginRoles: new FakeLoginRoles(), credentialsPerDatabase: 50 };
    expect(await failure(linkUser(p.deps, ada.caller, inHome, bob.user.id))).to.include({ code: 'developer_token_required' });
    expect((await linkUser({ ...p.deps, membersLinkUsers: true }, ada.caller, inHome, bob.user.id)).id).to.equal(bob.user.id);
    expect(await failure(unlinkUser(p.deps, ada.caller, inHome, bob.user.id))).to.include({ code: 'developer_token_required' });
    await unlinkUser({ ...p.deps, membersLinkUsers: true }, ada.caller, inHome, bob.user.id);
    expect(await p.data.repositories.users.tenantIds(bob.user.id)).to.deep.equal([]);
    expect(await failure(deleteTenant(deps, ada.caller, inHome))).to.include({ code: 'developer_token_required' });
    await deleteTenant({ ...deps, membersDeleteTenants: true }, ada.caller, inHome);
    expect(await p.data.repositories.tenants.find(home.id)).to.equal(null);
  });
});
