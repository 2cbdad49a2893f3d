import { expect } from 'chai';
import pg from 'pg';
import { databaseExists, eventually, httpClient, query } from '@platform/testing';
import { createDatabase, developerWithWorkspace, expectApiError, uniqueDatabaseName } from '@platform/test-fixtures';
import { startApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase, loginUser, TEST_PASSWORD } from './support/fixtures.js';

/** The test platform's gateway allows plain connections (apps/gateway/test covers TLS). */
function plain(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  return parsed.href;
}

/** `url` (a credential's) with another database name: what a client uses after a restore under a new name. */
function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(plain(url));
  parsed.pathname = `/${name}`;
  return parsed.href;
}

/** Rows of `sql` run through the gateway with a credential's URL. */
async function throughGateway<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: plain(url) });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** The SQLSTATE a login through the gateway is refused with; undefined when it is accepted. */
async function loginFailure(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: plain(url) });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    return (error as { code?: string }).code;
  } finally {
    await client.end().catch(() => {});
  }
  return undefined;
}

async function allowsConnections(p: TestPlatform, physicalName: string): Promise<boolean | undefined> {
  const [row] = await query<{ datallowconn: boolean }>(p.postgres.adminUrl, 'select datallowconn from pg_database where datname = $1', [physicalName]);
  return row?.datallowconn;
}

/** A READY database with a tenant, a user of it, rows in a table of the developer's and a credential. */
async function populatedDatabase(p: TestPlatform) {
  const owner = await developerWithReadyDatabase(p);
  const tenant = await createTenant(p, owner.token, owner.D, { name: 'Kept tenant' });
  const user = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
  const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
  expect(created.status, created.text).to.equal(201);
  const credential: { id: string; password: string; connectionUrl: string } = created.body;
  await throughGateway(credential.connectionUrl, `create table notes (body text); insert into notes values ('written before the delete')`);
  return { ...owner, tenant, user, credential, W: `/workspaces/${owner.slug}` };
}

describe('deleted databases: list, restore, purge', function () {
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  it('restores a deleted database with its data, tenants, users and credentials; while deleted, none of them work', async function () {
    const db = await populatedDatabase(p);
    const physicalName = await physicalNameOf(p, db.database.id);
    const session = new pg.Client({ connectionString: plain(db.credential.connectionUrl) });
    const ended = new Promise<Error & { code?: string }>((resolve) => session.on('error', resolve));
    await session.connect();

    // The user's token finds the database (and this API keeps where it is for a few seconds).
    expect((await p.request('GET', `${db.D}/tenants`, { token: db.user.jwt })).status).to.equal(200);
    const deleted = await p.request('DELETE', db.D, { token: db.token });
    expect(deleted.status, deleted.text).to.equal(200);
    expect(deleted.body).to.include({ id: db.database.id, status: 'DELETED', expandable: false });
    // Sessions through the gateway end; logins are refused as for an unknown credential.
    expect((await ended).code).to.equal('57P01');
    await session.end().catch(() => {});
    expect(await loginFailure(db.credential.connectionUrl)).to.equal('28P01');
    expect(await allowsConnections(p, physicalName)).to.equal(false);
    // The tenants and users are not reached: the developer's path, the user's sign-in and token.
    expectApiError(await p.request('GET', `${db.D}/tenants`, { token: db.token }), 404, 'database_not_found');
    expectApiError(await p.request('POST', `${db.D}/users/login`, { json: { email: db.user.email, password: TEST_PASSWORD } }), 401, 'authentication_failed');
    // Where this API still knows the database to be, its own connection is refused: the same 404 as
    // for a database dropped meanwhile, not a 500.
    expectApiError(await p.request('GET', `${db.D}/tenants`, { token: db.user.jwt }), 404, 'database_not_found');

    // Listed among the deleted ones, with `deleted`; not among the live ones.
    expect((await p.request('GET', `${db.W}/databases`, { token: db.token })).body).to.deep.equal([]);
    const listed = await p.request('GET', `${db.W}/databases?deleted=true`, { token: db.token });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body).to.deep.equal([deleted.body]);
    expect(listed.body[0].deleted).to.be.a('string');

    const restored = await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token });
    expect(restored.status, restored.text).to.equal(200);
    expect(restored.body).to.deep.equal(db.database);
    expect(await allowsConnections(p, physicalName)).to.equal(true);
    expect((await p.request('GET', `${db.W}/databases?deleted=true`, { token: db.token })).body).to.deep.equal([]);
    expect((await p.request('GET', db.D, { token: db.token })).body).to.deep.equal(db.database);

    // Everything as it was: the credential logs in through the gateway and sees its rows.
    expect(await throughGateway(db.credential.connectionUrl, 'select body from notes')).to.deep.equal([{ body: 'written before the delete' }]);
    const tenants = await p.request('GET', `${db.D}/tenants`, { token: db.token });
    expect(tenants.body.map((tenant: { id: string }) => tenant.id)).to.deep.equal([db.tenant.id]);
    const signedIn = await loginUser(p, db.D, { email: db.user.email, password: TEST_PASSWORD });
    expect(signedIn.tenants).to.deep.equal([db.tenant.id]);
    // The user's token from before the delete works again too.
    expect((await p.request('GET', `${db.D}/tenants`, { token: db.user.jwt })).status).to.equal(200);
  });

  it('frees the name at once; restores under a new name when it is taken (409 database_name_taken under the old one)', async function () {
    const db = await populatedDatabase(p);
    expect((await p.request('DELETE', db.D, { token: db.token })).status).to.equal(200);
    const successor = await createDatabase(p, db.token, db.slug, db.databaseName);
    expect(successor.id).to.not.equal(db.database.id);

    const taken = await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token });
    expectApiError(taken, 409, 'database_name_taken');
    expect(taken.body.message).to.include(db.databaseName);
    const invalid = await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token, json: { name: 'not-a-name' } });
    expectApiError(invalid, 400, 'validation_failed');
    expectApiError(await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token, json: { name: 'ok', extra: 1 } }), 400, 'validation_failed');

    const newName = uniqueDatabaseName('back');
    const restored = await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token, json: { name: newName } });
    expect(restored.status, restored.text).to.equal(200);
    expect(restored.body).to.deep.equal({ ...db.database, name: newName, dbHost: db.database.dbHost.replace(/\/[^/]+$/, `/${newName}`) });
    const names = (await p.request('GET', `${db.W}/databases`, { token: db.token })).body.map((database: { name: string }) => database.name);
    expect(names).to.have.members([db.databaseName, newName]);
    // Its credential logs in under the database's new name; the old name is the successor's now.
    expect(await throughGateway(withDatabaseName(db.credential.connectionUrl, newName), 'select body from notes')).to.deep.equal([{ body: 'written before the delete' }]);
    expect(await loginFailure(db.credential.connectionUrl)).to.equal('3D000');
  });

  it('purges a deleted database now: its PostgreSQL database and credentials’ roles are dropped, and it cannot be restored', async function () {
    const db = await populatedDatabase(p);
    const physicalName = await physicalNameOf(p, db.database.id);
    expect((await p.request('DELETE', db.D, { token: db.token })).status).to.equal(200);
    // Until the purge, the credential's role is kept (a restore brings it back as it was).
    const role = () => query(p.postgres.adminUrl, 'select 1 from pg_roles where rolname = $1', [db.credential.id]);
    expect(await role()).to.have.length(1);

    const purged = await p.request('POST', `${db.W}/databases/${db.database.id}/purge`, { token: db.token });
    expect(purged.status, purged.text).to.equal(204);
    expect(purged.text).to.equal('');
    expect(await databaseExists(p.postgres.adminUrl, physicalName)).to.equal(false);
    expect(await role()).to.deep.equal([]);
    expect(await query(p.controlPlane.url, 'select dropped is not null as dropped from databases where id = $1', [db.database.id])).to.deep.equal([{ dropped: true }]);

    expectApiError(await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token }), 404, 'database_not_found');
    expectApiError(await p.request('POST', `${db.W}/databases/${db.database.id}/purge`, { token: db.token }), 404, 'database_not_found');
    expect((await p.request('GET', `${db.W}/databases?deleted=true`, { token: db.token })).body).to.deep.equal([]);
    expect(await loginFailure(db.credential.connectionUrl)).to.equal('28P01');
  });

  it('shows a restore or branch that cannot be made as FAILED with its reason, and purges it at once when deleted', async function () {
    const db = await developerWithReadyDatabase(p);
    const physicalName = await physicalNameOf(p, db.database.id);
    // What the provisioner records when a copy's instant has left the backups' reach (provisioning.store.test.ts).
    const reason = 'the backups of database orders no longer reach 2026-01-01T00:00:00.000Z';
    await query(p.controlPlane.url, `update databases set status = 'REQUESTED', failure = $1 where id = $2`, [reason, db.database.id]);
    const shown = await p.request('GET', db.D, { token: db.token });
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.body).to.include({ status: 'FAILED', failure: reason, expandable: false });
    const listed = await p.request('GET', `/workspaces/${db.slug}/databases`, { token: db.token });
    expect(listed.body.map((item: { status: string }) => item.status)).to.deep.equal(['FAILED']);
    const credential = await p.request('POST', `${db.D}/credentials`, { token: db.token });
    expectApiError(credential, 409, 'database_not_ready');
    expect(credential.body.message).to.include('is FAILED, not READY');

    const deleted = await p.request('DELETE', db.D, { token: db.token });
    expect(deleted.status, deleted.text).to.equal(200);
    expect(deleted.body.status).to.equal('DELETED');
    expect(deleted.body).not.to.have.property('failure');
    await eventually(async () => ((await databaseExists(p.postgres.adminUrl, physicalName)) ? undefined : true), 10_000, 'the failed copy to be purged');
    expect((await p.request('GET', `/workspaces/${db.slug}/databases?deleted=true`, { token: db.token })).body).to.deep.equal([]);
    expectApiError(await p.request('POST', `/workspaces/${db.slug}/databases/${db.database.id}/restore`, { token: db.token }), 404, 'database_not_found');
  });

  it('answers 404 to anyone outside the workspace, for a live database, an unknown id and a name', async function () {
    const db = await populatedDatabase(p);
    const live = await developerWithReadyDatabase(p);
    expect((await p.request('DELETE', db.D, { token: db.token })).status).to.equal(200);
    const stranger = await developerWithWorkspace(p);
    for (const action of ['restore', 'purge']) {
      // Their own workspace's path with our database's id, and our workspace's path.
      expectApiError(await p.request('POST', `/workspaces/${stranger.slug}/databases/${db.database.id}/${action}`, { token: stranger.token }), 404, 'database_not_found');
      expectApiError(await p.request('POST', `${db.W}/databases/${db.database.id}/${action}`, { token: stranger.token }), 404, 'workspace_not_found');
      for (const id of [live.database.id, '00000000-0000-4000-8000-000000000000', live.databaseName]) {
        expectApiError(await p.request('POST', `/workspaces/${live.slug}/databases/${id}/${action}`, { token: live.token }), 404, 'database_not_found');
      }
    }
    expectApiError(await p.request('GET', `${db.W}/databases?deleted=true`, { token: stranger.token }), 404, 'workspace_not_found');
    expect((await p.request('GET', `/workspaces/${stranger.slug}/databases?deleted=true`, { token: stranger.token })).body).to.deep.equal([]);
    expectApiError(await p.request('GET', `${db.W}/databases?deleted=yes`, { token: db.token }), 400, 'validation_failed');
    // Still there for its own workspace.
    expect((await p.request('GET', `${db.W}/databases?deleted=true`, { token: db.token })).body.map((database: { id: string }) => database.id)).to.deep.equal([db.database.id]);
  });

  it('pages the deleted databases like the live ones', async function () {
    const owner = await developerWithWorkspace(p);
    const W = `/workspaces/${owner.slug}`;
    const names = [];
    for (let i = 0; i < 3; i++) {
      const name = uniqueDatabaseName(`gone${i}`);
      await createDatabase(p, owner.token, owner.slug, name);
      expect((await p.request('DELETE', `${W}/databases/${name}`, { token: owner.token })).status).to.equal(200);
      names.push(name);
    }
    const first = await p.request('GET', `${W}/databases?deleted=true&limit=2`, { token: owner.token });
    expect(first.body.map((database: { name: string }) => database.name)).to.deep.equal(names.slice(0, 2));
    const link = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(link).to.match(/deleted=true/);
    const second = await p.request('GET', link!, { token: owner.token });
    expect(second.body.map((database: { name: string }) => database.name)).to.deep.equal(names.slice(2));
    expect(second.headers.get('link')).to.equal(null);
  });

  it('documents the new answers in the OpenAPI document', async function () {
    const { paths } = (await p.request('GET', '/openapi.json')).body;
    const restore = paths['/workspaces/{workspaceSlug}/databases/{databaseId}/restore'].post;
    const purge = paths['/workspaces/{workspaceSlug}/databases/{databaseId}/purge'].post;
    expect(Object.keys(restore.responses)).to.deep.equal(['200', '400', '401', '403', '404', '409', '413', '415', '500', '503']);
    expect(Object.keys(purge.responses)).to.deep.equal(['204', '400', '401', '403', '404', '500', '503']);
    expect(restore.requestBody.required).to.equal(false);
    const list = paths['/workspaces/{workspaceSlug}/databases'].get;
    expect(list.parameters.map((parameter: { name: string; in: string }) => `${parameter.in} ${parameter.name}`)).to.deep.equal([
      'path workspaceSlug',
      'query deleted',
      'query limit',
      'query cursor',
    ]);
    const shown = restore.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(shown)).to.include('"DELETED"');
  });
});

describe('deleted databases past their retention', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let api: Awaited<ReturnType<typeof startApi>> | undefined;

  before(async function () {
    p = await platform();
  });

  after(async function () {
    await api?.close();
  });

  it('are dropped by the reconciler, and then cannot be restored', async function () {
    // An API of its own whose deletes are restorable for 2 seconds only.
    api = await startApi(loadApiConfig({ ...p.env, DATABASE_DELETE_RETENTION: '2s' }));
    const short = { ...p, request: httpClient(api.url) } as TestPlatform;
    const db = await populatedDatabase(short);
    const physicalName = await physicalNameOf(p, db.database.id);
    expect((await short.request('DELETE', db.D, { token: db.token })).status).to.equal(200);
    expect((await short.request('GET', `${db.W}/databases?deleted=true`, { token: db.token })).body).to.have.length(1);

    await eventually(async () => ((await databaseExists(p.postgres.adminUrl, physicalName)) ? undefined : true), 20_000, 'the database to be dropped');
    expect(await query(p.postgres.adminUrl, 'select 1 from pg_roles where rolname = $1', [db.credential.id])).to.deep.equal([]);
    expect((await short.request('GET', `${db.W}/databases?deleted=true`, { token: db.token })).body).to.deep.equal([]);
    expectApiError(await short.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token }), 404, 'database_not_found');
    expectApiError(await p.request('POST', `${db.W}/databases/${db.database.id}/restore`, { token: db.token }), 404, 'database_not_found');
    // The row stays, for audit, with when it was deleted and dropped.
    const [row] = await query<{ deleted: Date; dropped: Date }>(p.controlPlane.url, 'select deleted, dropped from databases where id = $1', [db.database.id]);
    expect(row.dropped.getTime() - row.deleted.getTime()).to.be.at.least(2_000);
  });
});

describe('the retention setting', function () {
  it('reads DATABASE_DELETE_RETENTION as seconds or with a unit, 7 days by default', async function () {
    const p = await platform();
    const env = { ...p.env };
    delete env.DATABASE_DELETE_RETENTION;
    expect(loadApiConfig(env).databaseDeleteRetentionSeconds).to.equal(7 * 86_400);
    expect(loadApiConfig({ ...env, DATABASE_DELETE_RETENTION: '36h' }).databaseDeleteRetentionSeconds).to.equal(36 * 3600);
    expect(loadApiConfig({ ...env, DATABASE_DELETE_RETENTION: '600' }).databaseDeleteRetentionSeconds).to.equal(600);
    expect(() => loadApiConfig({ ...env, DATABASE_DELETE_RETENTION: '1 week' })).to.throw(/^DATABASE_DELETE_RETENTION: /);
    expect(() => loadApiConfig({ ...env, DATABASE_DELETE_RETENTION: '0' })).to.throw(/^DATABASE_DELETE_RETENTION: /);
  });
});
