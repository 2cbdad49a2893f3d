import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createDatabase, developerWithWorkspace, expectApiError, uniqueDatabaseName, waitForStatus } from '@platform/test-fixtures';
import { eventually, httpClient, query } from '@platform/testing';
import { startApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase, type TestTenant } from './support/fixtures.js';

const ROLE_NAME = /^cred_[a-z2-7]{20}$/;
const PASSWORD = /^[A-Za-z0-9_-]{43}$/;

interface NewCredential {
  id: string;
  password: string;
  tenantId: string | null;
  connectionUrl: string;
  database: Record<string, unknown>;
}

/**
 * The test platform's gateway allows plain connections (apps/gateway/test covers TLS): the URL's
 * sslmode=require is left out.
 */
function plain(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  return parsed.href;
}

/** Opens a connection with a credential's URL; the caller ends it. */
async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: plain(url) });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** The SQLSTATE a failed login answers (28P01: wrong password or no such role). */
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

/** Runs `sql` in a transaction whose tenant context is `tenantId` (as the platform's tenant-aware tables expect). */
async function inTenant<R extends pg.QueryResultRow>(client: pg.Client, tenantId: string, sql: string, values: unknown[] = []): Promise<R[]> {
  await client.query('begin');
  try {
    await client.query(`select set_config('platform.tenant_id', $1, true)`, [tenantId]);
    const result = await client.query<R>(sql, values);
    await client.query('commit');
    return result.rows;
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

describe('credentials', function () {
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let ta: TestTenant;
  let tb: TestTenant;
  /** The database as a credential shows it. */
  let expectedDatabase: Record<string, unknown>;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    ta = await createTenant(p, owner.token, owner.D, { name: 'Tenant A' });
    tb = await createTenant(p, owner.token, owner.D, { name: 'Tenant B' });
    const { id, name, workspace, status, created, region } = owner.database;
    expectedDatabase = { id, name, workspace, status, regionId: 1, created, region };
  });

  async function createCredential(json?: { tenantId?: string }, D = owner.D, token = owner.token): Promise<NewCredential> {
    const created = await p.request('POST', `${D}/credentials`, { token, json });
    expect(created.status, created.text).to.equal(201);
    return created.body;
  }

  async function listed(query = '', D = owner.D, token = owner.token): Promise<{ id: string; tenantId: string | null }[]> {
    const response = await p.request('GET', `${D}/credentials${query}`, { token });
    expect(response.status, response.text).to.equal(200);
    return response.body;
  }

  describe('POST D/credentials', function () {
    it('answers 201 with the role name, a password shown once and a URL that logs in with both', async function () {
      const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('cache-control')).to.equal('no-store');
      expect(created.body).to.have.all.keys('id', 'password', 'database', 'tenantId', 'connectionUrl', 'pooledConnectionUrl');
      expect(created.body.pooledConnectionUrl, 'no pooled endpoint here (apps/gateway/test/pooled*.test.ts have one)').to.equal(null);
      const { id, password } = created.body;
      expect(id).to.match(ROLE_NAME);
      expect(password).to.match(PASSWORD);
      expect(created.body.tenantId).to.equal(null);
      expect(created.body.database).to.deep.equal(expectedDatabase);
      expect(created.body.connectionUrl).to.equal(`${owner.database.dbHost.replace('postgres://', `postgres://${id}:${password}@`)}?sslmode=require`);
      const client = await connect(created.body.connectionUrl);
      try {
        const rows = (await client.query('select current_user as who, current_database() as db')).rows;
        expect(rows).to.deep.equal([{ who: id, db: await physicalNameOf(p, owner.database.id) }]);
      } finally {
        await client.end();
      }
      const other = await createCredential({});
      expect(other.id).not.to.equal(id);
      expect(other.password).not.to.equal(password);
    });

    it('gives tables an unscoped credential creates to the other credentials, isolated by tenant', async function () {
      const first = await createCredential();
      const second = await createCredential();
      const scoped = await createCredential({ tenantId: ta.id });
      expect(scoped.tenantId).to.equal(ta.id);
      const table = `notes_${randomBytes(4).toString('hex')}`;
      const a = await connect(first.connectionUrl);
      const b = await connect(second.connectionUrl);
      const s = await connect(scoped.connectionUrl);
      try {
        await a.query(`create table ${table} (id serial primary key, tenant_id uuid not null references public.tenants (id), body text not null)`);
        await inTenant(a, ta.id, `insert into ${table} (tenant_id, body) values ($1, 'a1'), ($1, 'a2')`, [ta.id]);
        await inTenant(a, tb.id, `insert into ${table} (tenant_id, body) values ($1, 'b1')`, [tb.id]);
        expect(await inTenant(a, ta.id, `select body from ${table} order by id`)).to.deep.equal([{ body: 'a1' }, { body: 'a2' }]);
        // Another unscoped credential uses the table, in any tenant's context.
        expect(await inTenant(b, tb.id, `select body from ${table} order by id`)).to.deep.equal([{ body: 'b1' }]);
        await inTenant(b, tb.id, `insert into ${table} (tenant_id, body) values ($1, 'b2')`, [tb.id]);
        // Without a tenant context an unscoped credential sees every tenant's rows, as a developer token does.
        expect((await b.query(`select body from ${table} order by id`)).rows).to.deep.equal([{ body: 'a1' }, { body: 'a2' }, { body: 'b1' }, { body: 'b2' }]);
        // The scoped credential sees its tenant's rows only, whatever context it asks for.
        expect((await s.query(`select body from ${table} order by id`)).rows).to.deep.equal([{ body: 'a1' }, { body: 'a2' }]);
        expect(await inTenant(s, tb.id, `select body from ${table} order by id`)).to.deep.equal([{ body: 'a1' }, { body: 'a2' }]);
        await s.query(`insert into ${table} (tenant_id, body) values ($1, 'a3')`, [ta.id]);
        const smuggled = await inTenant(s, tb.id, `insert into ${table} (tenant_id, body) values ($1, 'into b')`, [tb.id]).catch((error) => error);
        expect(smuggled.code, 'row-level security refuses the row').to.equal('42501');
        expect(await inTenant(b, tb.id, `select body from ${table} order by id`)).to.deep.equal([{ body: 'b1' }, { body: 'b2' }]);
        expect(await inTenant(a, ta.id, `select body from ${table} order by id`)).to.deep.equal([{ body: 'a1' }, { body: 'a2' }, { body: 'a3' }]);
      } finally {
        await Promise.all([a.end(), b.end(), s.end()]);
      }
    });

    it('answers 404 tenant_not_found for a tenant the database does not have, 400 for an id that is not a UUID', async function () {
      const before = await listed();
      expectApiError(await p.request('POST', `${owner.D}/credentials`, { token: owner.token, json: { tenantId: randomUUID() } }), 404, 'tenant_not_found');
      expectApiError(await p.request('POST', `${owner.D}/credentials`, { token: owner.token, json: { tenantId: 'nope' } }), 400, 'validation_failed');
      expectApiError(await p.request('POST', `${owner.D}/credentials`, { token: owner.token, json: { tenant: ta.id } }), 400, 'validation_failed');
      expect(await listed()).to.deep.equal(before);
    });

    it('answers 409 database_not_ready for a database that is not READY', async function () {
      const workspace = await developerWithWorkspace(p);
      const name = uniqueDatabaseName('pending');
      const databaseId = randomUUID();
      // Straight into the control plane, with its provisioning far off: it stays REQUESTED.
      await query(
        p.controlPlane.url,
        `insert into databases (id, workspace_id, name, region, status, physical_name, created, updated, next_attempt_at)
         values ($1, $2, $3, 'AWS_US_WEST_2', 'REQUESTED', $4, now(), now(), now() + interval '1 day')`,
        [databaseId, workspace.workspace.id, name, `db_never_built_${randomBytes(8).toString('hex')}`],
      );
      try {
        const D = `/workspaces/${workspace.slug}/databases/${name}`;
        const response = await p.request('POST', `${D}/credentials`, { token: workspace.token });
        expectApiError(response, 409, 'database_not_ready');
        expect(response.body.message).to.equal(`Database '${name}' is REQUESTED, not READY yet`);
        expect((await p.request('GET', `${D}/credentials`, { token: workspace.token })).body).to.deep.equal([]);
      } finally {
        await query(p.controlPlane.url, 'delete from databases where id = $1', [databaseId]);
      }
    });
  });

  describe('the credential quota (CREDENTIALS_PER_DATABASE)', function () {
    it('answers 409 credential_quota_exceeded past the quota, creating nothing; concurrent creates at it do not both pass', async function () {
      // An API of its own, with a quota of 2, over the same control plane and clusters.
      const api = await startApi(loadApiConfig({ ...p.env, CREDENTIALS_PER_DATABASE: '2' }));
      try {
        const request = httpClient(api.url);
        const { D, token } = await developerWithReadyDatabase(p);
        const first = await request('POST', `${D}/credentials`, { token });
        expect(first.status, first.text).to.equal(201);
        const racing = await Promise.all([request('POST', `${D}/credentials`, { token }), request('POST', `${D}/credentials`, { token, json: { tenantId: undefined } })]);
        expect(racing.map((response) => response.status).sort()).to.deep.equal([201, 409]);
        const refused = await request('POST', `${D}/credentials`, { token });
        expectApiError(refused, 409, 'credential_quota_exceeded');
        expect(refused.body.message).to.match(/^Database '[^']+' has 2 credentials, its quota is 2; delete one first$/);
        const live = await request('GET', `${D}/credentials`, { token });
        expect(live.body.map((credential: { id: string }) => credential.id)).to.have.length(2);
        // Nothing of the refused ones reached the cluster: only the two recorded roles are members of the database's roles.
        const physical = await physicalNameOf(p, (await request('GET', D, { token })).body.id);
        const roles = await query<{ rolname: string }>(
          p.postgres.adminUrl,
          `select distinct r.rolname from pg_auth_members m join pg_roles g on g.oid = m.roleid join pg_roles r on r.oid = m.member
            where g.rolname in ($1 || '_owner', $1 || '_scoped') and r.rolname like 'cred\\_%' order by r.rolname`,
          [physical],
        );
        expect(roles.map((row) => row.rolname)).to.deep.equal(live.body.map((credential: { id: string }) => credential.id).sort());
        // A deleted credential frees its place.
        expect((await request('DELETE', `${D}/credentials/${first.body.id}`, { token })).status).to.equal(204);
        expect((await request('POST', `${D}/credentials`, { token })).status).to.equal(201);
      } finally {
        await api.close();
      }
    });
  });

  describe('GET D/credentials', function () {
    it('lists live credentials oldest first without passwords; tenantId and internal filter', async function () {
      const mine = await developerWithReadyDatabase(p);
      const tenant = await createTenant(p, mine.token, mine.D, { name: 'Only' });
      const open = await createCredential(undefined, mine.D, mine.token);
      const scoped = await createCredential({ tenantId: tenant.id }, mine.D, mine.token);
      const all = await p.request('GET', `${mine.D}/credentials`, { token: mine.token });
      expect(all.status, all.text).to.equal(200);
      const { id, name, workspace, status, created, region } = mine.database;
      const database = { id, name, workspace, status, regionId: 1, created, region };
      expect(all.body.map((row: Record<string, unknown>) => ({ ...row, created: undefined }))).to.deep.equal([
        { id: open.id, database, tenantId: null, created: undefined },
        { id: scoped.id, database, tenantId: tenant.id, created: undefined },
      ]);
      for (const row of all.body) expect(new Date(row.created).toISOString()).to.equal(row.created);
      expect(all.text).not.to.include(open.password);
      expect(all.text).not.to.include(scoped.password);
      const ids = async (q: string) => (await listed(q, mine.D, mine.token)).map((row) => row.id);
      expect(await ids('?internal=false')).to.deep.equal([open.id, scoped.id]);
      expect(await ids(`?tenantId=${tenant.id}`)).to.deep.equal([scoped.id]);
      expect(await ids(`?tenantId=${tenant.id.toUpperCase()}&internal=false`)).to.deep.equal([scoped.id]);
      expect(await ids(`?tenantId=${randomUUID()}`)).to.deep.equal([]);
      expect(await ids('?internal=true')).to.deep.equal([]);
      expectApiError(await p.request('GET', `${mine.D}/credentials?internal=yes`, { token: mine.token }), 400, 'validation_failed');
      expectApiError(await p.request('GET', `${mine.D}/credentials?tenantId=x`, { token: mine.token }), 400, 'validation_failed');
    });
  });

  describe('DELETE D/credentials/{credentialId}', function () {
    it('answers 204, ends the open session and refuses the login afterwards', async function () {
      const credential = await createCredential();
      const session = await connect(credential.connectionUrl);
      expect((await session.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
      const deleted = await p.request('DELETE', `${owner.D}/credentials/${credential.id}`, { token: owner.token });
      expect(deleted.status, deleted.text).to.equal(204);
      expect(deleted.text).to.equal('');
      const afterwards = await session.query('select 1').then(
        () => 'still open',
        () => 'ended',
      );
      await session.end().catch(() => {});
      expect(afterwards).to.equal('ended');
      expect(await loginFailure(credential.connectionUrl)).to.equal('28P01');
      expect((await listed()).map((row) => row.id)).not.to.include(credential.id);
      expectApiError(await p.request('DELETE', `${owner.D}/credentials/${credential.id}`, { token: owner.token }), 404, 'credential_not_found');
    });

    it('deleting a tenant drops its scoped credentials: their sessions end and they log in no more', async function () {
      const doomed = await createTenant(p, owner.token, owner.D, { name: 'Doomed' });
      const [scoped, unscoped] = [await createCredential({ tenantId: doomed.id }), await createCredential()];
      const session = await connect(scoped.connectionUrl);
      expect((await session.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
      const deleted = await p.request('DELETE', `${owner.D}/tenants/${doomed.id}`, { token: owner.token });
      expect(deleted.status, deleted.text).to.equal(204);
      const afterwards = await session.query('select 1').then(
        () => 'still open',
        () => 'ended',
      );
      await session.end().catch(() => {});
      expect(afterwards).to.equal('ended');
      expect(await loginFailure(scoped.connectionUrl)).to.equal('28P01');
      const ids = (await listed()).map((row) => row.id);
      expect(ids).not.to.include(scoped.id);
      expect(ids).to.include(unscoped.id);
      const stillThere = await connect(unscoped.connectionUrl);
      await stillThere.end();
    });

    it('keeps the tables the credential created, for the database’s other credentials', async function () {
      const creator = await createCredential();
      const other = await createCredential();
      const table = `kept_${randomBytes(4).toString('hex')}`;
      const client = await connect(creator.connectionUrl);
      await client.query(`create table ${table} (id int)`);
      await client.query(`insert into ${table} values (1)`);
      await client.end();
      expect((await p.request('DELETE', `${owner.D}/credentials/${creator.id}`, { token: owner.token })).status).to.equal(204);
      const reader = await connect(other.connectionUrl);
      try {
        expect((await reader.query(`select id from ${table}`)).rows).to.deep.equal([{ id: 1 }]);
      } finally {
        await reader.end();
      }
    });

    it('answers 404 credential_not_found for an unknown id and for another database’s credential', async function () {
      const credential = await createCredential();
      const otherName = uniqueDatabaseName();
      await createDatabase(p, owner.token, owner.slug, otherName);
      await waitForStatus(p, owner.token, owner.slug, otherName, 'READY');
      const otherD = `/workspaces/${owner.slug}/databases/${otherName}`;
      for (const path of [`${otherD}/credentials/${credential.id}`, `${owner.D}/credentials/cred_${'a'.repeat(20)}`]) {
        const response = await p.request('DELETE', path, { token: owner.token });
        expectApiError(response, 404, 'credential_not_found');
      }
      const client = await connect(credential.connectionUrl);
      await client.end();
    });
  });

  describe('who may manage credentials', function () {
    it('refuses a user token with 403 developer_token_required on every credential route', async function () {
      const credential = await createCredential();
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${ta.id}`);
      for (const [method, path, json] of [
        ['POST', `${owner.D}/credentials`, undefined],
        ['POST', `${owner.D}/credentials`, { tenantId: ta.id }],
        ['GET', `${owner.D}/credentials`, undefined],
        ['DELETE', `${owner.D}/credentials/${credential.id}`, undefined],
      ] as [string, string, unknown][]) {
        expectApiError(await p.request(method, path, { token: user.jwt, json }), 403, 'developer_token_required');
      }
      expect((await listed()).map((row) => row.id)).to.include(credential.id);
    });

    it('answers 404 workspace_not_found to a developer of another workspace', async function () {
      const credential = await createCredential();
      const stranger = await developerWithWorkspace(p);
      for (const [method, path] of [
        ['POST', `${owner.D}/credentials`],
        ['GET', `${owner.D}/credentials`],
        ['DELETE', `${owner.D}/credentials/${credential.id}`],
      ]) {
        expectApiError(await p.request(method, path, { token: stranger.token }), 404, 'workspace_not_found');
      }
      expectApiError(await p.request('GET', `/workspaces/${owner.slug}/databases/no_such_db/credentials`, { token: owner.token }), 404, 'database_not_found');
      expect((await listed()).map((row) => row.id)).to.include(credential.id);
    });

    it('answers 401 without a token', async function () {
      expectApiError(await p.request('POST', `${owner.D}/credentials`), 401, 'unauthorized');
      expectApiError(await p.request('GET', `${owner.D}/credentials`), 401, 'unauthorized');
    });
  });

  it('a wrong password does not log in', async function () {
    const credential = await createCredential();
    const url = new URL(credential.connectionUrl);
    url.password = `${credential.password.slice(0, -1)}${credential.password.endsWith('A') ? 'B' : 'A'}`;
    expect(await loginFailure(url.href)).to.equal('28P01');
  });

  it('deleting the database refuses its credentials’ logins; purging it drops their roles', async function () {
    const mine = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, mine.token, mine.D, { name: 'Gone soon' });
    const open = await createCredential(undefined, mine.D, mine.token);
    const scoped = await createCredential({ tenantId: tenant.id }, mine.D, mine.token);
    const physicalName = await physicalNameOf(p, mine.database.id);
    const names = [open.id, scoped.id, ...['owner', 'tenant', 'admin', 'scoped'].map((kind) => `${physicalName}_${kind}`)].sort();
    const roles = () => query<{ rolname: string }>(p.postgres.adminUrl, 'select rolname from pg_roles where rolname = any($1) order by rolname', [names]);
    expect((await roles()).map((row) => row.rolname)).to.deep.equal(names);
    const deleted = await p.request('DELETE', mine.D, { token: mine.token });
    expect(deleted.status).to.equal(200);
    expect(await loginFailure(open.connectionUrl)).to.equal('28P01');
    // Kept while the database can be restored.
    expect((await roles()).map((row) => row.rolname)).to.deep.equal(names);
    expect((await p.request('POST', `/workspaces/${mine.slug}/databases/${deleted.body.id}/purge`, { token: mine.token })).status).to.equal(204);
    await eventually(async () => ((await roles()).length === 0 ? true : undefined), 10_000, 'the roles to be dropped');
    expect(await loginFailure(open.connectionUrl)).to.equal('28P01');
  });

  it('documents every answer of the credential routes in the OpenAPI document', async function () {
    const { paths } = (await p.request('GET', '/openapi.json')).body;
    const credentials = paths['/workspaces/{workspaceSlug}/databases/{databaseName}/credentials'];
    const one = paths['/workspaces/{workspaceSlug}/databases/{databaseName}/credentials/{credentialId}'];
    expect(Object.keys(credentials.post.responses)).to.deep.equal(['201', '400', '401', '403', '404', '409', '413', '415', '500', '503']);
    expect(Object.keys(credentials.get.responses)).to.deep.equal(['200', '400', '401', '403', '404', '500', '503']);
    expect(Object.keys(one.delete.responses)).to.deep.equal(['204', '400', '401', '403', '404', '500', '503']);
    expect(credentials.get.parameters.map((parameter: { name: string; in: string }) => `${parameter.in} ${parameter.name}`)).to.deep.equal([
      'path workspaceSlug',
      'path databaseName',
      'query tenantId',
      'query internal',
      'query limit',
      'query cursor',
    ]);
    expect(credentials.post.description).to.include('the platform’s PostgreSQL gateway and the database’s name');
    // No body at all is the common case.
    expect(credentials.post.requestBody.required).to.equal(false);
    expect(credentials.get.parameters.find((parameter: { name: string }) => parameter.name === 'internal').schema.type).to.equal('boolean');
  });
});
