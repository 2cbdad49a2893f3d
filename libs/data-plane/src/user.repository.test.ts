import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ConflictError, NotFoundError, type DataPlaneRepositories } from '@platform/domain';
import { query, rejection } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';
import { databaseRoleNames } from './database-roles.js';
import { TENANT_CONTEXT_SETTING } from './tenant-context.js';

describe('PgUserRepository', function () {
  let plane: ScratchDataPlane;
  let url: string;
  let name: string;
  let repos: DataPlaneRepositories;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  beforeEach(async function () {
    ({ url, name, repos } = await plane.newDatabase('users'));
  });

  after(async function () {
    await plane?.close();
  });

  function newUser(email: string, tenantId?: string) {
    return repos.users.create({ email, passwordHash: `hash-of-${email}` }, tenantId);
  }

  describe('create', function () {
    it('stores the user with their password, and with a membership when given a tenant', async function () {
      const tenant = await repos.tenants.create({ name: 't' });
      const user = await repos.users.create(
        { email: 'Ada@Example.test', passwordHash: 'scrypt$ada', name: 'Ada L', givenName: 'Ada', familyName: 'L', picture: 'https://x.test/a.png' },
        tenant.id,
      );
      expect(user).to.deep.equal({
        id: user.id,
        email: 'Ada@Example.test',
        name: 'Ada L',
        givenName: 'Ada',
        familyName: 'L',
        picture: 'https://x.test/a.png',
        emailVerified: null,
        created: user.created,
        updated: user.created,
      });
      expect(await query(url, 'select user_id, method, secret from auth.credentials')).to.deep.equal([
        { user_id: user.id, method: 'password', secret: 'scrypt$ada' },
      ]);
      expect(await repos.users.tenantIds(user.id)).to.deep.equal([tenant.id]);

      const plain = await newUser('plain@example.test');
      expect(plain).to.include({ name: null, givenName: null, familyName: null, picture: null });
      expect(await repos.users.tenantIds(plain.id)).to.deep.equal([]);
    });

    it('refuses an email in use, whatever its case, as ConflictError email_taken', async function () {
      await newUser('taken@example.test');
      const error = await rejection(newUser('TAKEN@example.test'));
      expect(error).to.be.instanceOf(ConflictError);
      expect(error).to.include({ kind: 'conflict', code: 'email_taken', message: 'A user with this email already exists in this database' });
      expect(await query(url, 'select email from users.users')).to.deep.equal([{ email: 'taken@example.test' }]);
    });

    it('frees the email of a deleted user', async function () {
      const old = await newUser('reused@example.test');
      await query(url, 'update users.users set deleted = now() where id = $1', [old.id]);
      const again = await newUser('reused@example.test');
      expect(again.id).to.not.equal(old.id);
    });

    it('creates nothing for a tenant that does not exist or is deleted: NotFoundError tenant_not_found', async function () {
      const missing = randomUUID();
      const error = await rejection(newUser('orphan@example.test', missing));
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.include({ kind: 'not_found', code: 'tenant_not_found', message: `Tenant '${missing}' not found` });

      const deleted = await repos.tenants.create({ name: 'deleted' });
      await repos.tenants.delete(deleted.id);
      expect(await rejection(newUser('orphan@example.test', deleted.id))).to.include({ code: 'tenant_not_found' });
      expect(await query(url, 'select count(*)::int as users from users.users')).to.deep.equal([{ users: 0 }]);
      expect(await query(url, 'select count(*)::int as credentials from auth.credentials')).to.deep.equal([{ credentials: 0 }]);
    });
  });

  it('find and findCredentials return live users only; findCredentials ignores the email’s case', async function () {
    const user = await newUser('Grace@Example.test');
    expect(await repos.users.find(user.id)).to.deep.equal(user);
    expect(await repos.users.findCredentials('grace@example.TEST')).to.deep.equal({ user, passwordHash: 'hash-of-Grace@Example.test' });
    expect(await repos.users.findCredentials('nobody@example.test')).to.equal(null);
    expect(await repos.users.find(randomUUID())).to.equal(null);

    await query(url, 'update users.users set deleted = now() where id = $1', [user.id]);
    expect(await repos.users.find(user.id)).to.equal(null);
    expect(await repos.users.findCredentials('grace@example.test')).to.equal(null);
  });

  it('update changes the fields given (null clears one), and the update time', async function () {
    const user = await repos.users.create({ email: 'u@example.test', passwordHash: 'h', name: 'Name', givenName: 'Given', picture: 'p' });
    const updated = await repos.users.update(user.id, { givenName: 'New', picture: null });
    expect(updated).to.deep.equal({ ...user, givenName: 'New', picture: null, updated: updated!.updated });
    expect(updated!.updated.getTime()).to.be.greaterThan(user.updated.getTime());
    expect(await repos.users.find(user.id)).to.deep.equal(updated);

    const touched = await repos.users.update(user.id, {});
    expect(touched).to.deep.equal({ ...updated, updated: touched!.updated });
    expect(await repos.users.update(randomUUID(), { name: 'x' })).to.equal(null);
  });

  describe('memberships', function () {
    it('link adds a membership once; unlink removes it once', async function () {
      const tenant = await repos.tenants.create({ name: 't' });
      const user = await newUser('m@example.test');
      expect(await repos.users.link(tenant.id, user.id)).to.equal(true);
      expect(await repos.users.link(tenant.id, user.id)).to.equal(false);
      expect(await repos.users.tenantIds(user.id)).to.deep.equal([tenant.id]);

      expect(await repos.users.unlink(tenant.id, user.id)).to.equal(true);
      expect(await repos.users.unlink(tenant.id, user.id)).to.equal(false);
      expect(await repos.users.tenantIds(user.id)).to.deep.equal([]);
    });

    it('link refuses a deleted or unknown tenant or user', async function () {
      const [tenant, deleted] = [await repos.tenants.create({ name: 't' }), await repos.tenants.create({ name: 'deleted' })];
      await repos.tenants.delete(deleted.id);
      const [user, gone] = [await newUser('live@example.test'), await newUser('gone@example.test')];
      await query(url, 'update users.users set deleted = now() where id = $1', [gone.id]);

      expect(await repos.users.link(deleted.id, user.id)).to.equal(false);
      expect(await repos.users.link(randomUUID(), user.id)).to.equal(false);
      expect(await repos.users.link(tenant.id, gone.id)).to.equal(false);
      expect(await repos.users.link(tenant.id, randomUUID())).to.equal(false);
      expect(await query(url, 'select count(*)::int as memberships from users.tenant_users')).to.deep.equal([{ memberships: 0 }]);
    });

    it('tenantIds lists the user’s live tenants, oldest first', async function () {
      const [a, b, c] = [await repos.tenants.create({ name: 'a' }), await repos.tenants.create({ name: 'b' }), await repos.tenants.create({ name: 'c' })];
      const user = await newUser('ids@example.test', c.id);
      await repos.users.link(a.id, user.id);
      await repos.users.link(b.id, user.id);
      await repos.tenants.delete(b.id);
      expect(await repos.users.tenantIds(user.id)).to.deep.equal([a.id, c.id]);
    });

    it('shareTenant is true only when the two users have a live tenant in common', async function () {
      const [shared, mine] = [await repos.tenants.create({ name: 'shared' }), await repos.tenants.create({ name: 'mine' })];
      const me = await newUser('me@example.test', mine.id);
      const you = await newUser('you@example.test');
      expect(await repos.users.shareTenant(me.id, you.id)).to.equal(false);
      await repos.users.link(shared.id, me.id);
      await repos.users.link(shared.id, you.id);
      expect(await repos.users.shareTenant(me.id, you.id)).to.equal(true);
      expect(await repos.users.shareTenant(you.id, me.id)).to.equal(true);
      await repos.tenants.delete(shared.id);
      expect(await repos.users.shareTenant(me.id, you.id)).to.equal(false);
    });
  });

  describe('listMembers', function () {
    it('lists a tenant’s live members, earliest first, and no one else', async function () {
      const [a, b] = [await repos.tenants.create({ name: 'a' }), await repos.tenants.create({ name: 'b' })];
      const first = await newUser('first@example.test', a.id);
      const both = await newUser('both@example.test', a.id);
      await repos.users.link(b.id, both.id);
      const onlyB = await newUser('only-b@example.test', b.id);
      const gone = await newUser('gone@example.test', a.id);
      await query(url, 'update users.users set deleted = now() where id = $1', [gone.id]);

      expect(await repos.users.listMembers(a.id)).to.deep.equal([first, both]);
      expect(await repos.users.listMembers(b.id)).to.deep.equal([both, onlyB]);
      expect(await repos.users.listMembers(randomUUID())).to.deep.equal([]);
    });

    it('reads as the tenant role in that tenant’s context, which ends with its transaction', async function () {
      const [a, b] = [await repos.tenants.create({ name: 'a' }), await repos.tenants.create({ name: 'b' })];
      const inA = await newUser('a@example.test', a.id);
      await newUser('b@example.test', b.id);
      // Row-level security binds only the tenant role, and this policy lets it see users only in
      // A's context: B's members vanish from listMembers, which the owner alone would still see.
      await query(
        url,
        `create policy only_in_a on users.users as restrictive for select to ${databaseRoleNames(name).tenant}
           using (current_setting('${TENANT_CONTEXT_SETTING}', true) = '${a.id}')`,
      );

      expect(await repos.users.listMembers(a.id)).to.deep.equal([inA]);
      expect(await repos.users.listMembers(b.id)).to.deep.equal([]);
      // Neither the role nor the setting stays on the pooled connection.
      expect((await repos.tenants.list()).map((tenant) => tenant.name)).to.deep.equal(['a', 'b']);
      expect((await repos.users.findCredentials('b@example.test'))?.user.email).to.equal('b@example.test');
    });
  });

  describe('listMembersPage', function () {
    it('reads as the tenant role for a member, and for administration without row-level security, the filter kept', async function () {
      const [a, b] = [await repos.tenants.create({ name: 'a' }), await repos.tenants.create({ name: 'b' })];
      const inA = await newUser('a@example.test', a.id);
      const inB = await newUser('b@example.test', b.id);
      await query(
        url,
        `create policy only_in_a on users.users as restrictive for select to ${databaseRoleNames(name).tenant}
           using (current_setting('${TENANT_CONTEXT_SETTING}', true) = '${a.id}')`,
      );
      const page = { limit: 10, afterId: null };
      expect(await repos.users.listMembersPage(b.id, page, 'tenant')).to.deep.equal({ items: [], nextAfterId: null });
      expect(await repos.users.listMembersPage(b.id, page, 'administration')).to.deep.equal({ items: [inB], nextAfterId: null });
      expect(await repos.users.listMembersPage(a.id, page, 'administration')).to.deep.equal({ items: [inA], nextAfterId: null });
      expect(await repos.users.listMembersPage(randomUUID(), page, 'administration')).to.deep.equal({ items: [], nextAfterId: null });
    });
  });

  it('delete marks the user deleted, removes their memberships and ends their sessions, once', async function () {
    const tenant = await repos.tenants.create({ name: 'home' });
    const user = await newUser('leaving@example.test', tenant.id);
    const stays = await newUser('stays@example.test', tenant.id);
    const session = await repos.sessions.create(user.id, 600);
    const { token } = await repos.sessions.create(user.id, 600);

    expect(await repos.users.delete(user.id)).to.equal(true);
    expect(await repos.users.find(user.id)).to.equal(null);
    expect(await repos.users.tenantIds(user.id)).to.deep.equal([]);
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(false);
    expect(await repos.sessions.findByToken(token)).to.equal(null);
    const [row] = await query<{ revoked: number }>(url, 'select count(*)::int as revoked from auth.sessions where user_id = $1 and revoked is not null', [user.id]);
    expect(row.revoked).to.equal(2);
    expect((await repos.users.listMembers(tenant.id)).map((member) => member.id)).to.deep.equal([stays.id]);
    expect(await repos.users.delete(user.id)).to.equal(false);
    expect(await repos.users.delete(randomUUID())).to.equal(false);
    // Its email is free again.
    expect((await newUser('leaving@example.test')).id).to.not.equal(user.id);
  });

  describe('access', function () {
    it('answers, in one go, whether the session is live and whether the user belongs to the tenant', async function () {
      const [mine, theirs, deleted] = [await repos.tenants.create({ name: 'mine' }), await repos.tenants.create({ name: 'theirs' }), await repos.tenants.create({ name: 'deleted' })];
      const user = await newUser('access@example.test', mine.id);
      await repos.users.link(deleted.id, user.id);
      await repos.tenants.delete(deleted.id);
      const session = await repos.sessions.create(user.id, 600);

      expect(await repos.users.access(user.id, session.id, mine.id)).to.deep.equal({ sessionValid: true, member: true });
      expect(await repos.users.access(user.id, session.id, theirs.id)).to.deep.equal({ sessionValid: true, member: false });
      expect(await repos.users.access(user.id, session.id, deleted.id)).to.deep.equal({ sessionValid: true, member: false });

      await repos.sessions.revoke(session.id);
      expect(await repos.users.access(user.id, session.id, mine.id)).to.deep.equal({ sessionValid: false, member: true });
      const expired = await repos.sessions.create(user.id, 600);
      await query(url, `update auth.sessions set expires = now() - interval '1 second' where id = $1`, [expired.id]);
      expect(await repos.users.access(user.id, expired.id, mine.id)).to.deep.equal({ sessionValid: false, member: true });
      const other = await newUser('other@example.test');
      const othersSession = await repos.sessions.create(other.id, 600);
      expect(await repos.users.access(user.id, othersSession.id, mine.id)).to.deep.equal({ sessionValid: false, member: true });
    });
  });
});
