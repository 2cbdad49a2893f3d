import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ConflictError, type DataPlaneRepositories } from '@platform/domain';
import { query, rejection } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

describe('PgTenantRepository', function () {
  let plane: ScratchDataPlane;
  let url: string;
  let repos: DataPlaneRepositories;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  beforeEach(async function () {
    ({ url, repos } = await plane.newDatabase('tenants'));
  });

  after(async function () {
    await plane?.close();
  });

  async function newUser(email: string) {
    return repos.users.create({ email, passwordHash: 'hash' });
  }

  it('create makes a tenant with a new id, or with the id given', async function () {
    const generated = await repos.tenants.create({ name: 'Acme' });
    expect(generated.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(generated.name).to.equal('Acme');
    expect(generated.created).to.be.instanceOf(Date);
    expect(generated.updated.getTime()).to.equal(generated.created.getTime());

    const id = randomUUID();
    const chosen = await repos.tenants.create({ id, name: null });
    expect(chosen).to.deep.equal({ id, name: null, created: chosen.created, updated: chosen.updated });
    expect(await query(url, 'select id, name from tenants order by name nulls last')).to.deep.equal([
      { id: generated.id, name: 'Acme' },
      { id, name: null },
    ]);
  });

  it('create with an id in use is a ConflictError tenant_id_taken, and stores nothing', async function () {
    const id = randomUUID();
    await repos.tenants.create({ id, name: 'First' });
    const error = await rejection(repos.tenants.create({ id, name: 'Second' }));
    expect(error).to.be.instanceOf(ConflictError);
    expect(error).to.include({ kind: 'conflict', code: 'tenant_id_taken', message: `A tenant with id '${id}' already exists` });
    expect(await query(url, 'select name from tenants')).to.deep.equal([{ name: 'First' }]);
  });

  it('list returns the live tenants, oldest first; find returns one live tenant', async function () {
    const first = await repos.tenants.create({ name: 'first' });
    const second = await repos.tenants.create({ name: 'second' });
    const gone = await repos.tenants.create({ name: 'gone' });
    await repos.tenants.delete(gone.id);

    expect(await repos.tenants.list()).to.deep.equal([first, second]);
    expect(await repos.tenants.find(second.id)).to.deep.equal(second);
    expect(await repos.tenants.find(gone.id)).to.equal(null);
    expect(await repos.tenants.find(randomUUID())).to.equal(null);
  });

  it('rename changes the name and the update time of a live tenant only', async function () {
    const tenant = await repos.tenants.create({ name: 'before' });
    const renamed = await repos.tenants.rename(tenant.id, 'after');
    expect(renamed).to.deep.equal({ ...tenant, name: 'after', updated: renamed!.updated });
    expect(renamed!.updated.getTime()).to.be.greaterThan(tenant.updated.getTime());
    expect(await repos.tenants.find(tenant.id)).to.deep.equal(renamed);
    expect((await repos.tenants.rename(tenant.id, null))?.name).to.equal(null);

    expect(await repos.tenants.rename(randomUUID(), 'nobody')).to.equal(null);
    await repos.tenants.delete(tenant.id);
    expect(await repos.tenants.rename(tenant.id, 'again')).to.equal(null);
  });

  it('delete soft-deletes the tenant and removes its memberships; a second delete answers false', async function () {
    const tenant = await repos.tenants.create({ name: 'doomed' });
    const other = await repos.tenants.create({ name: 'other' });
    const user = await newUser('member@example.test');
    await repos.users.link(tenant.id, user.id);
    await repos.users.link(other.id, user.id);

    expect(await repos.tenants.delete(tenant.id)).to.equal(true);
    expect(await repos.tenants.delete(tenant.id)).to.equal(false);
    expect(await repos.tenants.delete(randomUUID())).to.equal(false);
    const [row] = await query(url, 'select deleted is not null as deleted from tenants where id = $1', [tenant.id]);
    expect(row).to.deep.equal({ deleted: true });
    expect(await query(url, 'select tenant_id from users.tenant_users')).to.deep.equal([{ tenant_id: other.id }]);
  });

  describe('listForUser', function () {
    it('lists the live tenants of a live session’s user, oldest first', async function () {
      const [a, b, deleted, notMine] = [
        await repos.tenants.create({ name: 'a' }),
        await repos.tenants.create({ name: 'b' }),
        await repos.tenants.create({ name: 'deleted' }),
        await repos.tenants.create({ name: 'not mine' }),
      ];
      const user = await newUser('lister@example.test');
      const someoneElse = await newUser('else@example.test');
      for (const tenant of [b, a, deleted]) await repos.users.link(tenant.id, user.id);
      await repos.users.link(notMine.id, someoneElse.id);
      await repos.tenants.delete(deleted.id);
      const session = await repos.sessions.create(user.id, 600);

      expect(await repos.tenants.listForUser(user.id, session.id)).to.deep.equal({ sessionValid: true, tenants: [a, b] });
    });

    it('answers a valid session with no tenants as valid, with none', async function () {
      const user = await newUser('lonely@example.test');
      const session = await repos.sessions.create(user.id, 600);
      expect(await repos.tenants.listForUser(user.id, session.id)).to.deep.equal({ sessionValid: true, tenants: [] });
    });

    it('lists nothing for a session that is revoked, expired, another user’s or unknown, or of a deleted user', async function () {
      const tenant = await repos.tenants.create({ name: 't' });
      const user = await newUser('owner@example.test');
      const other = await newUser('other@example.test');
      await repos.users.link(tenant.id, user.id);
      await repos.users.link(tenant.id, other.id);
      const invalid = { sessionValid: false, tenants: [] };

      const revoked = await repos.sessions.create(user.id, 600);
      await repos.sessions.revoke(revoked.id);
      expect(await repos.tenants.listForUser(user.id, revoked.id)).to.deep.equal(invalid);

      const expired = await repos.sessions.create(user.id, 600);
      await query(url, `update auth.sessions set expires = now() - interval '1 second' where id = $1`, [expired.id]);
      expect(await repos.tenants.listForUser(user.id, expired.id)).to.deep.equal(invalid);

      const othersSession = await repos.sessions.create(other.id, 600);
      expect(await repos.tenants.listForUser(user.id, othersSession.id)).to.deep.equal(invalid);
      expect(await repos.tenants.listForUser(user.id, 'no-such-session')).to.deep.equal(invalid);

      const live = await repos.sessions.create(user.id, 600);
      expect((await repos.tenants.listForUser(user.id, live.id)).sessionValid).to.equal(true);
      await query(url, 'update users.users set deleted = now() where id = $1', [user.id]);
      expect(await repos.tenants.listForUser(user.id, live.id)).to.deep.equal(invalid);
    });

    it('sees a membership removed at once', async function () {
      const tenant = await repos.tenants.create({ name: 't' });
      const user = await newUser('leaver@example.test');
      await repos.users.link(tenant.id, user.id);
      const session = await repos.sessions.create(user.id, 600);
      expect((await repos.tenants.listForUser(user.id, session.id)).tenants).to.deep.equal([tenant]);
      await repos.users.unlink(tenant.id, user.id);
      expect(await repos.tenants.listForUser(user.id, session.id)).to.deep.equal({ sessionValid: true, tenants: [] });
    });
  });
});
