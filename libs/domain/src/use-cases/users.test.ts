import { expect } from 'chai';
import { HOW_TO_GET_A_DEVELOPER_TOKEN } from '../authorization.js';
import { failure } from './assertions.test-support.js';
import { fakePlatform } from './fakes.test-support.js';
import { listTenants } from './tenants.js';
import {
  createUserWithSession,
  currentUser,
  getDatabaseUser,
  getTenantUser,
  linkUser,
  listTenantUsers,
  listUserTenants,
  signOut,
  signUp,
  unlinkUser,
  updateDatabaseUser,
} from './users.js';

const sessionEnded = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'invalid_token', message: 'The session of this token has ended' };
const userTokenRequired = { name: 'ForbiddenError', kind: 'forbidden', code: 'user_token_required', message: 'This operation needs a user token' };
const invalidPassword = { name: 'ValidationError', kind: 'validation', code: 'invalid_password', message: 'Password must be 8 to 256 characters' };

function notFound(what: 'tenant' | 'user', id: string) {
  return { name: 'NotFoundError', kind: 'not_found', code: `${what}_not_found`, message: `${what === 'tenant' ? 'Tenant' : 'User'} '${id}' not found` };
}

function developerOnly(message: string) {
  return { name: 'ForbiddenError', kind: 'forbidden', code: 'developer_token_required', message };
}

/** acme/main with tenants home and away: ada and bob in home, carol in away. */
async function withMembers() {
  const p = fakePlatform();
  const home = await p.tenant('Home');
  const away = await p.tenant('Away');
  const ada = await p.user('ada@example.com', 'password-ada', [home]);
  const bob = await p.user('bob@example.com', 'password-bob', [home]);
  const carol = await p.user('carol@example.com', 'password-carol', [away]);
  const inHome = { workspaceSlug: 'acme', databaseName: 'main', tenantId: home.id };
  return { p, home, away, ada, bob, carol, inHome };
}

const MEMBERS_DO_NOT_CREATE = {
  name: 'ForbiddenError',
  kind: 'forbidden',
  code: 'developer_token_required',
  message:
    'Only a developer can create users here: an email may already have an account in another tenant, which a member must not learn. ' +
      `A developer attaches an existing account with PUT .../users/{userId}/link. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`,
};

describe('user use cases', () => {
  describe('signUp', () => {
    it('creates a member of the tenant with a hashed password and signs them in', async () => {
      const { p, home, inHome } = await withMembers();
      const result = await signUp(p.deps, p.alice, inHome, { email: 'dan@example.com', password: 'password-dan', name: 'Dan' });
      const stored = p.data.users.find((row) => row.user.email === 'dan@example.com')!;
      const session = p.data.sessions[p.data.sessions.length - 1];
      expect(stored.passwordHash).to.equal('hash:password-dan');
      expect(result).to.deep.equal({
        user: stored.user,
        tenantIds: [home.id],
        token: { jwt: `jwt:${stored.user.id}:${p.main.id}:${session.id}`, maxAge: 3600, type: 'ACCESS_TOKEN' },
        session: { token: session.token, maxAge: 86_400 },
      });
      expect(stored.user.name).to.equal('Dan');
    });

    it('refuses a member 403 before reading the email or password, unless members create users', async () => {
      const { p, ada, inHome, home } = await withMembers();
      for (const input of [{ email: 'dan@example.com', password: 'password-dan' }, { email: 'ada@example.com', password: 'short' }]) {
        expect(await failure(signUp(p.deps, ada.caller, inHome, input))).to.deep.equal(MEMBERS_DO_NOT_CREATE);
      }
      expect(p.data.users.map((row) => row.user.email)).not.to.include('dan@example.com');
      const allowed = { ...p.deps, membersCreateUsers: true };
      expect((await signUp(allowed, ada.caller, inHome, { email: 'dan@example.com', password: 'password-dan' })).tenantIds).to.deep.equal([home.id]);
    });

    it('answers a user outside the tenant 404, wherever members create users', async () => {
      const { p, carol, inHome, home } = await withMembers();
      p.deps.membersCreateUsers = true;
      expect(await failure(signUp(p.deps, carol.caller, inHome, { email: 'eve@example.com', password: 'password-eve' }))).to.deep.equal(notFound('tenant', home.id));
      expect(p.data.users.map((row) => row.user.email)).not.to.include('eve@example.com');
    });

    it('takes passwords of 8 to 256 characters only', async () => {
      const { p, inHome } = await withMembers();
      for (const password of ['1234567', 'x'.repeat(257)]) {
        expect(await failure(signUp(p.deps, p.alice, inHome, { email: 'dan@example.com', password }))).to.deep.equal(invalidPassword);
      }
      await signUp(p.deps, p.alice, inHome, { email: 'dan@example.com', password: '12345678' });
      await signUp(p.deps, p.alice, inHome, { email: 'erin@example.com', password: 'x'.repeat(256) });
    });
  });

  describe('signOut', () => {
    it('ends the user’s session, so their token stops working at once', async () => {
      const { p, ada } = await withMembers();
      await signOut(p.deps, ada.caller, 'acme', 'main');
      expect(await failure(listTenants(p.deps, ada.caller, 'acme', 'main'))).to.deep.equal(sessionEnded);
    });

    it('refuses a developer token (403)', async () => {
      const { p } = await withMembers();
      expect(await failure(signOut(p.deps, p.alice, 'acme', 'main'))).to.deep.equal(userTokenRequired);
    });
  });

  describe('currentUser', () => {
    it('answers the signed-in user and their tenants', async () => {
      const { p, ada, home } = await withMembers();
      expect(await currentUser(p.deps, ada.caller, 'acme', 'main')).to.deep.equal({ user: ada.user, tenantIds: [home.id] });
    });

    it('refuses a developer (403) and a user whose session ended (401)', async () => {
      const { p, ada } = await withMembers();
      expect(await failure(currentUser(p.deps, p.alice, 'acme', 'main'))).to.deep.equal(userTokenRequired);
      await p.data.repositories.sessions.revoke(ada.caller.sessionId);
      expect(await failure(currentUser(p.deps, ada.caller, 'acme', 'main'))).to.deep.equal(sessionEnded);
    });
  });

  describe('tenant members', () => {
    it('lists a tenant’s members for a developer and for a member, and 404 for anyone else', async () => {
      const { p, ada, bob, carol, inHome, home } = await withMembers();
      expect((await listTenantUsers(p.deps, p.alice, inHome)).items).to.deep.equal([ada.user, bob.user]);
      expect((await listTenantUsers(p.deps, ada.caller, inHome)).items).to.deep.equal([ada.user, bob.user]);
      expect(await failure(listTenantUsers(p.deps, carol.caller, inHome))).to.deep.equal(notFound('tenant', home.id));
    });

    it('finds a member of the tenant, and answers a user outside it 404 even when they exist', async () => {
      const { p, ada, bob, carol, inHome } = await withMembers();
      expect(await getTenantUser(p.deps, ada.caller, inHome, bob.user.id)).to.deep.equal(bob.user);
      expect(await failure(getTenantUser(p.deps, ada.caller, inHome, carol.user.id))).to.deep.equal(notFound('user', carol.user.id));
      expect(await failure(getTenantUser(p.deps, p.alice, inHome, carol.user.id))).to.deep.equal(notFound('user', carol.user.id));
    });

    it('lets a developer add an existing user to a tenant, refuses a member (403), and 404s an unknown user', async () => {
      const { p, ada, carol, inHome, home } = await withMembers();
      expect(await failure(linkUser(p.deps, ada.caller, inHome, carol.user.id))).to.deep.equal(developerOnly(`Only a developer can add a user to a tenant. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`));
      expect(await linkUser(p.deps, p.alice, inHome, carol.user.id)).to.deep.equal(carol.user);
      expect(p.data.isMember(carol.user.id, home.id)).to.equal(true);
      expect(await failure(linkUser(p.deps, p.alice, inHome, 'user-none'))).to.deep.equal(notFound('user', 'user-none'));
    });

    it('lets a member leave but not remove others (403); a developer removes anyone', async () => {
      const { p, ada, bob, carol, inHome, home } = await withMembers();
      expect(await failure(unlinkUser(p.deps, ada.caller, inHome, bob.user.id))).to.deep.equal(developerOnly(`A member can only remove themselves from a tenant. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`));
      await unlinkUser(p.deps, ada.caller, inHome, ada.user.id);
      await unlinkUser(p.deps, p.acmeClient, inHome, bob.user.id);
      expect(p.data.isMember(ada.user.id, home.id) || p.data.isMember(bob.user.id, home.id)).to.equal(false);
      expect(await failure(unlinkUser(p.deps, p.alice, inHome, carol.user.id))).to.deep.equal(notFound('user', carol.user.id));
    });
  });

  describe('database users', () => {
    it('shows a user themselves and those they share a tenant with, and 404 for anyone else', async () => {
      const { p, ada, bob, carol } = await withMembers();
      expect(await getDatabaseUser(p.deps, ada.caller, 'acme', 'main', ada.user.id)).to.deep.equal(ada.user);
      expect(await getDatabaseUser(p.deps, ada.caller, 'acme', 'main', bob.user.id)).to.deep.equal(bob.user);
      expect(await failure(getDatabaseUser(p.deps, ada.caller, 'acme', 'main', carol.user.id))).to.deep.equal(notFound('user', carol.user.id));
      expect(await getDatabaseUser(p.deps, p.alice, 'acme', 'main', carol.user.id)).to.deep.equal(carol.user);
    });

    it('answers 401 to a user whose session ended', async () => {
      const { p, ada } = await withMembers();
      await p.data.repositories.sessions.revoke(ada.caller.sessionId);
      expect(await failure(getDatabaseUser(p.deps, ada.caller, 'acme', 'main', ada.user.id))).to.deep.equal(sessionEnded);
    });

    it('lets users update only their own profile (403 for another they see, 404 for one they do not)', async () => {
      const { p, ada, bob, carol } = await withMembers();
      expect(await updateDatabaseUser(p.deps, ada.caller, 'acme', 'main', ada.user.id, { givenName: 'Ada' })).to.deep.equal({ ...ada.user, givenName: 'Ada' });
      expect(await failure(updateDatabaseUser(p.deps, ada.caller, 'acme', 'main', bob.user.id, { givenName: 'Bobby' }))).to.deep.equal({
        name: 'ForbiddenError',
        kind: 'forbidden',
        code: 'not_your_profile',
        message: 'Users can only update their own profile',
      });
      expect(await failure(updateDatabaseUser(p.deps, ada.caller, 'acme', 'main', carol.user.id, { givenName: 'C' }))).to.deep.equal(notFound('user', carol.user.id));
      expect(await updateDatabaseUser(p.deps, p.alice, 'acme', 'main', bob.user.id, { name: 'Robert' })).to.deep.equal({ ...bob.user, name: 'Robert' });
    });

    it('lists a user’s tenants for themselves and for a developer, and 404 for another user', async () => {
      const { p, ada, carol, home, away } = await withMembers();
      expect(await listUserTenants(p.deps, ada.caller, 'acme', 'main', ada.user.id)).to.deep.equal([home]);
      expect(await listUserTenants(p.deps, p.alice, 'acme', 'main', carol.user.id)).to.deep.equal([away]);
      expect(await failure(listUserTenants(p.deps, ada.caller, 'acme', 'main', carol.user.id))).to.deep.equal(notFound('user', carol.user.id));
      expect(await failure(listUserTenants(p.deps, p.alice, 'acme', 'main', 'user-none'))).to.deep.equal(notFound('user', 'user-none'));
    });
  });

  describe('createUserWithSession (the v2 cookie path)', () => {
    it('refuses a signed-in member 403 whatever the email, unless members create users', async () => {
      const { p, ada, home } = await withMembers();
      expect(await failure(createUserWithSession(p.deps, ada.cookie, { databaseId: p.main.id, tenantId: home.id }, { email: 'ada@example.com', password: 'password-dan' }))).to.deep.equal(
        MEMBERS_DO_NOT_CREATE,
      );
    });

    it('lets a signed-in member create a user in their tenant where members create users', async () => {
      const { p, ada, home } = await withMembers();
      p.deps.membersCreateUsers = true;
      const created = await createUserWithSession(p.deps, ada.cookie, { databaseId: p.main.id, tenantId: home.id }, { email: 'dan@example.com', password: 'password-dan' });
      expect(created.email).to.equal('dan@example.com');
      expect(p.data.isMember(created.id, home.id)).to.equal(true);
      expect(p.data.users.find((row) => row.user.id === created.id)?.passwordHash).to.equal('hash:password-dan');
    });

    it('answers 401 without a cookie, for a database that is not there or not READY, and for an unknown cookie', async () => {
      const { p, ada, home } = await withMembers();
      const required = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'invalid_session', message: 'A session cookie is required' };
      const input = { email: 'dan@example.com', password: 'password-dan' };
      expect(await failure(createUserWithSession(p.deps, undefined, { databaseId: p.main.id, tenantId: home.id }, input))).to.deep.equal(required);
      expect(await failure(createUserWithSession(p.deps, ada.cookie, { databaseId: 'db-none', tenantId: home.id }, input))).to.deep.equal(required);
      expect(await failure(createUserWithSession(p.deps, ada.cookie, { databaseId: p.building.id, tenantId: home.id }, input))).to.deep.equal(required);
      expect(await failure(createUserWithSession(p.deps, 'cookie-none', { databaseId: p.main.id, tenantId: home.id }, input))).to.deep.equal({
        ...required,
        message: 'The session is not valid',
      });
    });

    it('answers a user outside the tenant 404 before judging the password, then the password rule', async () => {
      const { p, ada, carol, home } = await withMembers();
      p.deps.membersCreateUsers = true;
      expect(await failure(createUserWithSession(p.deps, carol.cookie, { databaseId: p.main.id, tenantId: home.id }, { email: 'dan@example.com', password: 'short' }))).to.deep.equal(
        notFound('tenant', home.id),
      );
      expect(await failure(createUserWithSession(p.deps, ada.cookie, { databaseId: p.main.id, tenantId: home.id }, { email: 'dan@example.com', password: 'short' }))).to.deep.equal(
        invalidPassword,
      );
    });
  });
});
