import { expect } from 'chai';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { databaseExists, query } from '@platform/testing';
import { createDatabase, developerWithWorkspace, expectApiError, uniqueDatabaseName, waitForStatus } from '@platform/test-fixtures';
import { physicalNameOf, platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';

/** Queries the database behind a platform database, as the test server's superuser. */
async function queryAsSuperuser(p: TestPlatform, databaseId: string, sql: string) {
  const client = new pg.Client({ connectionString: databaseUrl(p.postgres.adminUrl, await physicalNameOf(p, databaseId)) });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('databases', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  describe('POST W/databases', function () {
    it('answers 201 in REQUESTED, then the provisioner makes it BUILT and READY on PostgreSQL', async function () {
      const { token, slug, workspace } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      const created = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: name, region: 'AWS_EU_CENTRAL_1' } });
      expect(created.status).to.equal(201);
      expect(created.headers.get('location')).to.equal(`/workspaces/${slug}/databases/${name}`);
      expect(created.body).to.include({ name, status: 'REQUESTED', region: 'AWS_EU_CENTRAL_1', sharded: false, expandable: false, apiHost: TEST_AUDIENCE });
      expect(created.body.workspace).to.deep.equal(workspace);
      // The gateway, and the name the developer chose.
      expect(created.body.dbHost).to.equal(`postgres://127.0.0.1:${p.env.GATEWAY_PORT}/${name}`);

      const ready = await waitForStatus(p, token, slug, name, 'READY');
      expect(ready.id).to.equal(created.body.id);
      expect(await databaseExists(p.postgres.adminUrl, await physicalNameOf(p, ready.id))).to.equal(true);
      const tables = await queryAsSuperuser(
        p,
        ready.id,
        `select table_schema || '.' || table_name as name from information_schema.tables
         where table_schema in ('public', 'users', 'auth', 'platform') order by 1`,
      );
      expect(tables.map((row) => row.name)).to.include.members([
        'public.tenants',
        'users.users',
        'users.tenant_users',
        'auth.credentials',
        'auth.sessions',
        'platform.schema_steps',
      ]);
    });

    it('answers 409 database_name_taken for a name in use in the workspace, and creates nothing', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      await createDatabase(p, token, slug, name);
      const again = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: name, region: 'AWS_US_WEST_2' } });
      expectApiError(again, 409, 'database_name_taken');
      expect((await p.request('GET', `/workspaces/${slug}/databases`, { token })).body).to.have.length(1);
    });

    it('allows the same name in two workspaces', async function () {
      const a = await developerWithWorkspace(p);
      const b = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      const first = await createDatabase(p, a.token, a.slug, name);
      const second = await createDatabase(p, b.token, b.slug, name);
      expect(first.id).not.to.equal(second.id);
      // The same address: the gateway tells them apart by the credential that connects.
      expect(first.dbHost).to.equal(second.dbHost);
    });

    it('refuses a region the platform does not serve with 400 region_not_served', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const response = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: 'x', region: 'AZURE_EASTUS' } });
      expectApiError(response, 400, 'region_not_served');
      expect((await p.request('GET', `/workspaces/${slug}/databases`, { token })).body).to.deep.equal([]);
    });

    const badBodies: [string, unknown][] = [
      ['a missing name', { region: 'AWS_US_WEST_2' }],
      ['a missing region', { databaseName: 'ok' }],
      ['an unknown region', { databaseName: 'ok', region: 'MARS_1' }],
      ['an empty name', { databaseName: '', region: 'AWS_US_WEST_2' }],
      ['a 64-character name', { databaseName: 'a'.repeat(64), region: 'AWS_US_WEST_2' }],
      ['a name starting with a digit', { databaseName: '1abc', region: 'AWS_US_WEST_2' }],
      ['a name with a hyphen', { databaseName: 'a-b', region: 'AWS_US_WEST_2' }],
      ['a name with a space', { databaseName: 'a b', region: 'AWS_US_WEST_2' }],
      ['a non-ASCII name', { databaseName: 'café', region: 'AWS_US_WEST_2' }],
      ['a SQL-looking name', { databaseName: 'x; drop database postgres', region: 'AWS_US_WEST_2' }],
      ['a numeric name', { databaseName: 12, region: 'AWS_US_WEST_2' }],
      ['an unknown field', { databaseName: 'ok', region: 'AWS_US_WEST_2', sharded: true }],
      ['a huge name', { databaseName: 'a'.repeat(50_000), region: 'AWS_US_WEST_2' }],
    ];
    for (const [what, body] of badBodies) {
      it(`refuses ${what} with 400 and creates nothing`, async function () {
        const { token, slug } = await developerWithWorkspace(p);
        expectApiError(await p.request('POST', `/workspaces/${slug}/databases`, { token, json: body }), 400, 'validation_failed');
        expect((await p.request('GET', `/workspaces/${slug}/databases`, { token })).body).to.deep.equal([]);
      });
    }

    it('accepts a 63-character name and one starting with an underscore', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      await createDatabase(p, token, slug, `_${'a'.repeat(62)}`);
      await createDatabase(p, token, slug, '_Mixed_Case_9');
    });
  });

  describe('POST W/databases with from (restores and branches, database-copies.test.ts)', function () {
    it('refuses a source whose cluster is not backed up (this platform’s is not) with 409 backups_not_configured, and a missing region without from with 400', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const source = await createDatabase(p, token, slug);
      await waitForStatus(p, token, slug, source.name, 'READY');
      const refused = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: uniqueDatabaseName(), from: { database: source.name } } });
      expectApiError(refused, 409, 'backups_not_configured');
      expect(refused.body.message).to.include(`database '${source.name}' are not configured on this platform`);
      const noRegion = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: uniqueDatabaseName() } });
      expectApiError(noRegion, 400, 'validation_failed');
      expect(noRegion.body.message).to.match(/^region: /);
      expect((await p.request('GET', `/workspaces/${slug}/databases`, { token })).body).to.have.length(1);
    });
  });

  describe('GET W/databases and GET D', function () {
    it('lists the workspace’s live databases with sharded, oldest first', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const names = [uniqueDatabaseName('a'), uniqueDatabaseName('b')];
      for (const name of names) await createDatabase(p, token, slug, name);
      const listed = await p.request('GET', `/workspaces/${slug}/databases`, { token });
      expect(listed.status).to.equal(200);
      expect(listed.body.map((d: { name: string }) => d.name)).to.deep.equal(names);
      for (const database of listed.body) expect(database.sharded).to.equal(false);
    });

    it('answers 404 database_not_found for a missing database', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      expectApiError(await p.request('GET', `/workspaces/${slug}/databases/nope`, { token }), 404, 'database_not_found');
      expectApiError(await p.request('GET', `/workspaces/${slug}/databases/${'x'.repeat(101)}`, { token }), 400, 'validation_failed');
    });
  });

  describe('PUT D (rename)', function () {
    it('renames, answers with parent {id, name} as it was, and keeps the PostgreSQL database', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      const created = await createDatabase(p, token, slug, name);
      await waitForStatus(p, token, slug, name, 'READY');
      const renamed = await p.request('PUT', `/workspaces/${slug}/databases/${name}`, { token, json: { name: 'renamed_db' } });
      expect(renamed.status).to.equal(200);
      // The same PostgreSQL database, reached under its new name.
      expect(renamed.body).to.include({ id: created.id, name: 'renamed_db', status: 'READY', dbHost: created.dbHost.replace(/\/[^/]+$/, '/renamed_db') });
      expect(renamed.body.parent).to.deep.equal({ id: created.id, name });
      expectApiError(await p.request('GET', `/workspaces/${slug}/databases/${name}`, { token }), 404, 'database_not_found');
      expect((await p.request('GET', `/workspaces/${slug}/databases/renamed_db`, { token })).body.id).to.equal(created.id);
      expect(await databaseExists(p.postgres.adminUrl, await physicalNameOf(p, created.id))).to.equal(true);
    });

    it('answers 409 when the new name is taken, and changes nothing', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      await createDatabase(p, token, slug, 'first');
      await createDatabase(p, token, slug, 'second');
      expectApiError(await p.request('PUT', `/workspaces/${slug}/databases/first`, { token, json: { name: 'second' } }), 409, 'database_name_taken');
      const names = (await p.request('GET', `/workspaces/${slug}/databases`, { token })).body.map((d: { name: string }) => d.name);
      expect(names).to.deep.equal(['first', 'second']);
    });

    it('treats the current name as a no-op', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const created = await createDatabase(p, token, slug, 'same');
      const renamed = await p.request('PUT', `/workspaces/${slug}/databases/same`, { token, json: { name: 'same' } });
      expect(renamed.status).to.equal(200);
      expect(renamed.body.parent).to.deep.equal({ id: created.id, name: 'same' });
    });

    for (const [what, body] of [
      ['an empty name', { name: '' }],
      ['a 64-character name', { name: 'b'.repeat(64) }],
      ['a leading digit', { name: '9lives' }],
      ['punctuation', { name: 'a.b' }],
      ['a missing name', {}],
      ['a wrong type', { name: ['x'] }],
      ['an unknown field', { name: 'ok', region: 'AWS_US_WEST_2' }],
    ] as [string, unknown][]) {
      it(`refuses ${what} with 400 and keeps the old name`, async function () {
        const { token, slug } = await developerWithWorkspace(p);
        await createDatabase(p, token, slug, 'keep');
        expectApiError(await p.request('PUT', `/workspaces/${slug}/databases/keep`, { token, json: body }), 400, 'validation_failed');
        expect((await p.request('GET', `/workspaces/${slug}/databases/keep`, { token })).status).to.equal(200);
      });
    }

    it('answers 404 for a missing database', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      expectApiError(await p.request('PUT', `/workspaces/${slug}/databases/ghost`, { token, json: { name: 'x' } }), 404, 'database_not_found');
    });
  });

  describe('DELETE D', function () {
    it('answers 200 with the database marked DELETED, keeps its PostgreSQL database closed and frees the name', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      await createDatabase(p, token, slug, name);
      const ready = await waitForStatus(p, token, slug, name, 'READY');
      const before = Date.now();
      const deleted = await p.request('DELETE', `/workspaces/${slug}/databases/${name}`, { token });
      expect(deleted.status, deleted.text).to.equal(200);
      expect(deleted.headers.get('content-type')).to.match(/^application\/json/);
      const { deleted: when, ...rest } = deleted.body;
      expect(rest).to.deep.equal({ ...ready, status: 'DELETED', expandable: false });
      expect(Date.parse(when)).to.be.within(before - 1000, Date.now() + 1000);
      const physicalName = await physicalNameOf(p, ready.id);
      expect(await databaseExists(p.postgres.adminUrl, physicalName)).to.equal(true);
      expect(await query(p.postgres.adminUrl, 'select datallowconn from pg_database where datname = $1', [physicalName])).to.deep.equal([{ datallowconn: false }]);
      expectApiError(await p.request('GET', `/workspaces/${slug}/databases/${name}`, { token }), 404, 'database_not_found');
      expect((await p.request('GET', `/workspaces/${slug}/databases`, { token })).body).to.deep.equal([]);
      const again = await createDatabase(p, token, slug, name);
      expect(again.id).not.to.equal(ready.id);
      expect(await physicalNameOf(p, again.id)).not.to.equal(physicalName);
    });

    it('ends open connections to the database and refuses new ones, the cluster superuser’s too', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      await createDatabase(p, token, slug, name);
      const ready = await waitForStatus(p, token, slug, name, 'READY');
      const physicalName = await physicalNameOf(p, ready.id);
      const client = new pg.Client({ connectionString: databaseUrl(p.postgres.adminUrl, physicalName) });
      const ended = new Promise<Error & { code?: string }>((resolve) => client.on('error', resolve));
      await client.connect();
      try {
        expect((await p.request('DELETE', `/workspaces/${slug}/databases/${name}`, { token })).status).to.equal(200);
        // Ended by the time DELETE answered.
        expect((await ended).code).to.equal('57P01');
        const refused = await queryAsSuperuser(p, ready.id, 'select 1').catch((error: { code?: string }) => error);
        expect(refused).to.include({ code: '55000' });
      } finally {
        await client.end().catch(() => {});
      }
    });

    it('a database deleted before it was built stays unbuilt and closed while deleted, and is built once restored', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const name = uniqueDatabaseName();
      const created = await createDatabase(p, token, slug, name);
      expect((await p.request('DELETE', `/workspaces/${slug}/databases/${name}`, { token })).status).to.equal(200);
      // Whatever the provisioner had done by then, nothing moves on while it is deleted.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const physicalName = await physicalNameOf(p, created.id);
      const [row] = await query<{ status: string }>(p.controlPlane.url, 'select status from databases where id = $1', [created.id]);
      expect(row.status).to.be.oneOf(['REQUESTED', 'BUILT']);
      const found = await query<{ datallowconn: boolean }>(p.postgres.adminUrl, 'select datallowconn from pg_database where datname = $1', [physicalName]);
      // Created or not, nothing connects to it.
      for (const database of found) expect(database.datallowconn).to.equal(false);

      const restored = await p.request('POST', `/workspaces/${slug}/databases/${created.id}/restore`, { token });
      expect(restored.status, restored.text).to.equal(200);
      expect(restored.body.status).to.be.oneOf(['REQUESTED', 'BUILT']);
      await waitForStatus(p, token, slug, name, 'READY');
      expect(await query(p.postgres.adminUrl, 'select datallowconn from pg_database where datname = $1', [physicalName])).to.deep.equal([{ datallowconn: true }]);
    });

    it('answers 404 for a missing or already deleted database', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      await createDatabase(p, token, slug, 'once');
      expect((await p.request('DELETE', `/workspaces/${slug}/databases/once`, { token })).status).to.equal(200);
      expectApiError(await p.request('DELETE', `/workspaces/${slug}/databases/once`, { token }), 404, 'database_not_found');
    });
  });
});

describe('sign-in to a database deleted a moment ago', function () {
  it('answers the same 401 as any other sign-in failure, not 404', async function () {
    const p = await platform();
    const { token, slug } = await developerWithWorkspace(p);
    const name = uniqueDatabaseName();
    await createDatabase(p, token, slug, name);
    await waitForStatus(p, token, slug, name, 'READY');
    const D = `/workspaces/${slug}/databases/${name}`;
    const tenant = await p.request('POST', `${D}/tenants`, { token, json: { name: 'Soon gone' } });
    const user = await p.request('POST', `${D}/tenants/${tenant.body.id}/users`, { token, json: { email: 'gone@example.test', password: 'correct horse' } });
    expect(user.status, user.text).to.equal(201);
    // Signing in caches the database's path; deleting it leaves that path cached for a few seconds.
    expect((await p.request('POST', `${D}/users/login`, { json: { email: 'gone@example.test', password: 'correct horse' } })).status).to.equal(200);
    expect((await p.request('DELETE', D, { token })).status).to.equal(200);
    expectApiError(await p.request('POST', `${D}/users/login`, { json: { email: 'gone@example.test', password: 'correct horse' } }), 401, 'authentication_failed');
  });
});
