import { expect } from 'chai';
import pg from 'pg';
import { rejection, withClient } from '@platform/testing';
import { firstColumn, startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';
import { serviceRoleName, serviceUrl } from './service-role.js';

describe('the service role (how the API reaches a database)', function () {
  let dp: ScratchDataPlane;
  let first: Awaited<ReturnType<ScratchDataPlane['newDatabase']>>;
  let second: Awaited<ReturnType<ScratchDataPlane['newDatabase']>>;

  before(async function () {
    dp = await startScratchDataPlane();
    first = await dp.newDatabase('svc');
    second = await dp.newDatabase('svc');
    // The first use is refused (step 5 makes the role without a login) and repaired.
    await first.repos.tenants.create({ name: 'Acme' });
  });

  after(async function () {
    this.timeout(90_000);
    await dp?.close();
  });

  async function asService<T>(database: { name: string }, fn: (client: pg.Client) => Promise<T>): Promise<T> {
    return withClient(serviceUrl(dp.server.adminUrl, database.name), fn);
  }

  it('is a login of its own database with BYPASSRLS and no superuser, CREATEDB, CREATEROLE or REPLICATION', async function () {
    const rows = await withClient(dp.server.adminUrl, (admin) =>
      admin.query('select rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls from pg_roles where rolname = $1', [serviceRoleName(first.name)]),
    );
    expect(rows.rows).to.deep.equal([{ rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: true }]);
  });

  it('logs in with SCRAM-SHA-256 at one iteration (its password is a 256-bit HMAC), over a cheap handshake', async function () {
    const [verifier] = await withClient(dp.server.adminUrl, (admin) => firstColumn<string>(admin, 'select rolpassword from pg_authid where rolname = $1', [serviceRoleName(first.name)]));
    expect(verifier).to.match(/^SCRAM-SHA-256\$1:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await asService(first, async (client) => (await client.query('select current_user as who')).rows)).to.deep.equal([{ who: serviceRoleName(first.name) }]);
  });

  it('cannot become a superuser or another role, in or out of a tenant’s transaction', async function () {
    await asService(first, async (client) => {
      expect((await rejection(client.query('set role postgres'))).code).to.equal('42501');
      expect((await rejection(client.query('set session authorization postgres'))).code).to.equal('42501');
      await client.query('begin');
      await client.query(`select set_config('role', current_database() || '_tenant', true)`);
      expect(await firstColumn(client, 'select current_user')).to.deep.equal([`${first.name}_tenant`]);
      await client.query('reset role');
      expect(await firstColumn(client, 'select current_user')).to.deep.equal([serviceRoleName(first.name)]);
      expect(await firstColumn(client, 'select rolsuper from pg_roles where rolname = current_user')).to.deep.equal([false]);
      await client.query('rollback');
    });
  });

  it('cannot connect to another platform database', async function () {
    const url = new URL(serviceUrl(dp.server.adminUrl, first.name));
    url.pathname = `/${second.name}`;
    const error = await rejection(withClient(url.href, (client) => client.query('select 1')));
    expect(error.code).to.equal('42501');
  });

  it('has no privilege on customer tables it did not make', async function () {
    await withClient(dp.server.urlFor(first.name), (admin) => admin.query('create table public.secrets (id int)'));
    await asService(first, async (client) => {
      expect((await rejection(client.query('select * from public.secrets'))).code).to.equal('42501');
    });
  });
});
