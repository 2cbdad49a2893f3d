import { expect } from 'chai';
import { databaseUrl } from '@platform/config';
import { eventually, query, withClient } from '@platform/testing';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { createTenant, developerWithReadyDatabase } from './support/fixtures.js';

describe('how the API reaches a database', function () {
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  it('connects to each database as its own service role, never as the cluster’s superuser', async function () {
    const owner = await developerWithReadyDatabase(p);
    await createTenant(p, owner.token, owner.D, { name: 'Acme' });
    const physicalName = await physicalNameOf(p, owner.database.id);
    const sessions = await query<{ usename: string; rolsuper: boolean }>(
      p.postgres.adminUrl,
      `select a.usename, r.rolsuper from pg_stat_activity a join pg_roles r on r.oid = a.usesysid
        where a.datname = $1 and a.pid <> pg_backend_pid() group by 1, 2`,
      [physicalName],
    );
    expect(sessions).to.deep.equal([{ usename: `${physicalName}_service`, rolsuper: false }]);
  });

  it('brings a database built before its service role existed up to date at the first refused login', async function () {
    const owner = await developerWithReadyDatabase(p);
    const physicalName = await physicalNameOf(p, owner.database.id);
    const service = `${physicalName}_service`;
    // As a database of built-in schema step 4 was: no service role, no step 5 recorded.
    await withClient(databaseUrl(p.postgres.adminUrl, physicalName), async (admin) => {
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [service]);
      await admin.query('delete from platform.schema_steps where version = 5');
      await admin.query(`drop owned by ${service}`);
      await admin.query(`drop role ${service}`);
    });
    await eventually(async () => ((await query(p.postgres.adminUrl, 'select 1 from pg_stat_activity where usename = $1', [service])).length === 0 ? true : undefined));

    const tenant = await createTenant(p, owner.token, owner.D, { name: 'After the upgrade' });
    expect((await p.request('GET', `${owner.D}/tenants/${tenant.id}`, { token: owner.token })).status).to.equal(200);
    const steps = await query<{ version: number }>(databaseUrl(p.postgres.adminUrl, physicalName), 'select version from platform.schema_steps order by 1');
    expect(steps.map((row) => row.version)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    const role = await query(p.postgres.adminUrl, 'select rolcanlogin, rolsuper, rolbypassrls from pg_roles where rolname = $1', [service]);
    expect(role).to.deep.equal([{ rolcanlogin: true, rolsuper: false, rolbypassrls: true }]);
  });
});
