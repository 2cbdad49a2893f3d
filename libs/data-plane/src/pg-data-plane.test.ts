import { expect } from 'chai';
import { serviceUrl } from './service-role.js';
import { setDatabaseAllowConnections } from './database-limits.js';
import { NotFoundError } from '@platform/domain';
import { dropScratchDatabase, eventually, rejection, withClient } from '@platform/testing';
import { firstColumn, readyDatabase, startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

describe('PgDataPlane', function () {
  let plane: ScratchDataPlane;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  after(async function () {
    await plane?.close();
  });

  it('opens each platform database on connections of its own: what one holds, another does not', async function () {
    const one = await plane.newDatabase('one');
    const two = await plane.newDatabase('two');
    const tenant = await one.repos.tenants.create({ name: 'only in one' });
    expect(await one.repos.tenants.list()).to.deep.equal([tenant]);
    expect(await two.repos.tenants.list()).to.deep.equal([]);
    expect(await plane.dataPlane.open(one.record).tenants.find(tenant.id)).to.deep.equal(tenant);
  });

  it('builds a database whose built-in tables have statistics, so few rows are not planned as many', async function () {
    const database = await plane.newDatabase('analyzed');
    const never = await withClient(plane.server.urlFor(database.name), (admin) =>
      firstColumn<string>(
        admin,
        `select c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind = 'r' and n.nspname in ('public', 'users', 'auth', 'platform') and c.reltuples < 0 order by 1`,
      ),
    );
    expect(never).to.deep.equal(['platform.schema_steps']);
  });

  it('answers for a database that does not exist with NotFoundError database_not_found', async function () {
    const error = await rejection(plane.dataPlane.open(readyDatabase('never_created')).tenants.list());
    expect(error).to.be.instanceOf(NotFoundError);
    expect(error).to.include({ kind: 'not_found', code: 'database_not_found', message: 'Database not found' });
  });

  it('answers the same once the database is dropped under a connection that was using it', async function () {
    const database = await plane.newDatabase('dropped');
    await database.repos.tenants.create({ name: 'before the drop' });
    const url = serviceUrl(plane.server.adminUrl, database.name);
    const before = plane.connections.usage(url);
    expect(before.idle).to.equal(before.open);

    await dropScratchDatabase(plane.server, database.name);
    // The drop ended the database's connection; the budget forgets it when it hears so.
    await eventually(async () => (plane.connections.usage(url).open === before.open - 1 ? true : undefined), 5_000, 'the ended connection to leave the budget');
    for (const attempt of [() => database.repos.tenants.list(), () => database.repos.users.find(database.record.id), () => database.repos.sessions.findByToken('t')]) {
      const error = await rejection(attempt());
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error).to.include({ code: 'database_not_found', message: 'Database not found' });
    }
  });

  it('answers the same for a database closed to connections (deleted, restorable), and works again once it is reopened', async function () {
    const database = await plane.newDatabase('closed');
    const tenant = await database.repos.tenants.create({ name: 'kept' });
    const url = serviceUrl(plane.server.adminUrl, database.name);
    const before = plane.connections.usage(url);
    await withClient(plane.server.adminUrl, async (admin) => {
      await setDatabaseAllowConnections(admin, database.name, false);
      await admin.query('select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = $1', [database.name]);
    });
    // Its one connection ended; the budget forgets it when it hears so.
    await eventually(async () => (plane.connections.usage(url).open === before.open - 1 ? true : undefined), 5_000, 'the ended connection to leave the budget');
    const error = await rejection(database.repos.tenants.list());
    expect(error).to.be.instanceOf(NotFoundError);
    expect(error).to.include({ code: 'database_not_found', message: 'Database not found' });

    await withClient(plane.server.adminUrl, (admin) => setDatabaseAllowConnections(admin, database.name, true));
    expect(await database.repos.tenants.list()).to.deep.equal([tenant]);
  });

  it('brings a database built before a step up to date when a built-in table is missing, and tries again', async function () {
    const database = await plane.newDatabase('behind');
    const tenant = await database.repos.tenants.create({ name: 'acme' });
    // As a release before step 6 left it.
    await withClient(plane.server.urlFor(database.name), async (admin) => {
      await admin.query('drop table auth.identities');
      await admin.query('delete from platform.schema_steps where version = 6');
    });
    const identity = { issuer: 'https://idp.test', subject: 'u-1' };
    expect(await database.repos.users.findByIdentity(identity)).to.equal(null);
    const user = await database.repos.users.createWithIdentity({ email: 'a@corp.test', emailVerified: new Date() }, identity, tenant.id);
    expect(await database.repos.users.findByIdentity(identity)).to.deep.equal(user);
    const steps = await withClient(plane.server.urlFor(database.name), (admin) => firstColumn<number>(admin, 'select version from platform.schema_steps order by 1'));
    expect(steps).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
  });

  it('brings a database built before step 8 up to date when a member page misses its column, keeping the users’ order', async function () {
    const database = await plane.newDatabase('behind8');
    const tenant = await database.repos.tenants.create({ name: 'acme' });
    const older = await database.repos.users.create({ email: 'older@corp.test', passwordHash: 'h' });
    const newer = await database.repos.users.create({ email: 'newer@corp.test', passwordHash: 'h' }, tenant.id);
    // As a release before step 8 left it, with a membership made then.
    await withClient(plane.server.urlFor(database.name), async (admin) => {
      await admin.query('drop trigger tenant_users_user_created on users.tenant_users');
      await admin.query('drop function platform.tenant_users_user_created()');
      await admin.query('alter table users.tenant_users drop column user_created');
      await admin.query('delete from platform.schema_steps where version = 8');
    });
    const page = { limit: 10, afterId: null };
    expect(await database.repos.users.listMembersPage(tenant.id, page, 'administration')).to.deep.equal({ items: [newer], nextAfterId: null });
    // Linked after `newer`, created before: members come in their users' order, not their links'.
    expect(await database.repos.users.link(tenant.id, older.id)).to.equal(true);
    expect(await database.repos.users.listMembersPage(tenant.id, page, 'tenant')).to.deep.equal({ items: [older, newer], nextAfterId: null });
    expect(await database.repos.users.listMembersPage(tenant.id, { limit: 1, afterId: null }, 'administration')).to.deep.equal({ items: [older], nextAfterId: older.id });
    expect(await database.repos.users.listMembersPage(tenant.id, { limit: 1, afterId: older.id }, 'administration')).to.deep.equal({ items: [newer], nextAfterId: null });
  });

  it('links an identity to one live user only; a deleted user’s link passes to whoever signs in next', async function () {
    const database = await plane.newDatabase('identities');
    const tenant = await database.repos.tenants.create({ name: 'acme' });
    const identity = { issuer: 'https://idp.test', subject: 'shared' };
    const first = await database.repos.users.createWithIdentity({ email: 'first@corp.test', emailVerified: new Date() }, identity, tenant.id);
    const other = await database.repos.users.create({ email: 'other@corp.test', passwordHash: 'x' }, tenant.id);
    const taken = await rejection(database.repos.users.linkIdentity(other.id, identity));
    expect(taken).to.include({ code: 'identity_taken' });
    await database.repos.users.linkIdentity(first.id, identity);
    expect((await database.repos.users.findByIdentity(identity))?.id).to.equal(first.id);

    await withClient(plane.server.urlFor(database.name), (admin) => admin.query('update users.users set deleted = now() where id = $1', [first.id]));
    expect(await database.repos.users.findByIdentity(identity)).to.equal(null);
    await database.repos.users.linkIdentity(other.id, identity);
    expect((await database.repos.users.findByIdentity(identity))?.id).to.equal(other.id);
    expect(await database.repos.users.findByEmail('OTHER@corp.test')).to.deep.equal(other);
    expect(await database.repos.users.findByEmail('first@corp.test')).to.equal(null);
  });
});
