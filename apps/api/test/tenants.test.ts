import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { developerWithWorkspace, expectApiError, uniqueDatabaseName } from '@platform/test-fixtures';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, createTenant, createUser, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function controlPlaneQuery(p: TestPlatform, sql: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: p.controlPlane.url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

describe('tenants', function () {
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
  });

  async function tenantIds(token = owner.token, D = owner.D): Promise<string[]> {
    const listed = await p.request('GET', `${D}/tenants`, { token });
    expect(listed.status, listed.text).to.equal(200);
    return listed.body.map((tenant: { id: string }) => tenant.id);
  }

  describe('POST D/tenants', function () {
    it('answers 201 with the tenant and its Location', async function () {
      const created = await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: { name: 'Acme' } });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.have.all.keys('id', 'name', 'created', 'updated');
      expect(created.body.id).to.match(UUID);
      expect(created.body.name).to.equal('Acme');
      expect(new Date(created.body.created).toISOString()).to.equal(created.body.created);
      expect(created.headers.get('location')).to.equal(`${owner.D}/tenants/${created.body.id}`);
      const fetched = await p.request('GET', created.headers.get('location') as string, { token: owner.token });
      expect(fetched.status).to.equal(200);
      expect(fetched.body).to.deep.equal(created.body);
      expect(await tenantIds()).to.include(created.body.id);
    });

    it('refuses a name of only spaces, on create and rename, and keeps names trimmed', async function () {
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: { name: '   ' } }), 400, 'invalid_tenant_name');
      const created = await createTenant(p, owner.token, owner.D, { name: '  Padded  ' });
      expect(created.name).to.equal('Padded');
      const path = `${owner.D}/tenants/${created.id}`;
      expectApiError(await p.request('PUT', path, { token: owner.token, json: { name: ' \t ' } }), 400, 'invalid_tenant_name');
      expect((await p.request('GET', path, { token: owner.token })).body.name).to.equal('Padded');
    });

    it('lets only developers choose a tenant id (a user could otherwise probe which ids exist)', async function () {
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Home' });
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
      const before = await tenantIds();
      for (const id of [tenant.id, randomUUID()]) {
        const response = await p.request('POST', `${owner.D}/tenants`, { token: user.jwt, json: { name: 'Probe', id } });
        expectApiError(response, 403, 'developer_token_required');
      }
      const own = await p.request('POST', `${owner.D}/tenants`, { token: user.jwt, json: { name: 'Mine' } });
      expect(own.status, own.text).to.equal(201);
      expect(await tenantIds()).to.deep.equal([...before, own.body.id]);
    });

    it('accepts an id of the caller’s choosing', async function () {
      const id = randomUUID();
      const created = await createTenant(p, owner.token, owner.D, { name: 'Chosen', id });
      expect(created.id).to.equal(id);
      expect((await p.request('GET', `${owner.D}/tenants/${id}`, { token: owner.token })).body.name).to.equal('Chosen');
    });

    it('answers 409 tenant_id_taken for an id in use, and changes nothing', async function () {
      const id = randomUUID();
      await createTenant(p, owner.token, owner.D, { name: 'First', id });
      const before = await tenantIds();
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: { name: 'Second', id } }), 409, 'tenant_id_taken');
      expect((await p.request('GET', `${owner.D}/tenants/${id}`, { token: owner.token })).body.name).to.equal('First');
      expect(await tenantIds()).to.deep.equal(before);
    });

    it('answers 409 tenant_id_taken for the id of a deleted tenant', async function () {
      const { id } = await createTenant(p, owner.token, owner.D);
      expect((await p.request('DELETE', `${owner.D}/tenants/${id}`, { token: owner.token })).status).to.equal(204);
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: { name: 'Back', id } }), 409, 'tenant_id_taken');
      expectApiError(await p.request('GET', `${owner.D}/tenants/${id}`, { token: owner.token }), 404, 'tenant_not_found');
    });

    const badBodies: [string, unknown][] = [
      ['a missing name', {}],
      ['an empty name', { name: '' }],
      ['a null name', { name: null }],
      ['a numeric name', { name: 42 }],
      ['a 256-character name', { name: 'n'.repeat(256) }],
      ['a huge name', { name: 'n'.repeat(50_000) }],
      ['a name with a NUL character', { name: 'a\u0000b' }],
      ['an unknown field', { name: 'ok', owner: 'me' }],
      ['a non-UUID id', { name: 'ok', id: 'tenant-1' }],
      ['a UUID with trailing text', { name: 'ok', id: `${randomUUID()}x` }],
      ['a numeric id', { name: 'ok', id: 7 }],
      // Issue 11, finding 6: the nil UUID is a placeholder, not an id.
      ['the nil UUID as id', { name: 'ok', id: '00000000-0000-0000-0000-000000000000' }],
      ['an array', [{ name: 'ok' }]],
    ];
    for (const [what, body] of badBodies) {
      it(`refuses ${what} with 400 validation_failed and creates nothing`, async function () {
        const before = await tenantIds();
        expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: body }), 400, 'validation_failed');
        expect(await tenantIds()).to.deep.equal(before);
      });
    }

    it('refuses a missing body, malformed JSON and a non-JSON body with 400, and creates nothing', async function () {
      const before = await tenantIds();
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token }), 400, 'validation_failed');
      expectApiError(
        await p.request('POST', `${owner.D}/tenants`, { token: owner.token, raw: '{"name": ', contentType: 'application/json' }),
        400,
        'malformed_json',
      );
      // Strict JSON: a bare string is not a body.
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: owner.token, json: 'ok' }), 400, 'malformed_json');
      expectApiError(
        await p.request('POST', `${owner.D}/tenants`, { token: owner.token, raw: 'name=x', contentType: 'application/x-www-form-urlencoded' }),
        415,
        'unsupported_content_type',
      );
      expect(await tenantIds()).to.deep.equal(before);
    });

    it('makes a user who creates a tenant its first and only member', async function () {
      const home = await createTenant(p, owner.token, owner.D);
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${home.id}`);
      const created = await p.request('POST', `${owner.D}/tenants`, { token: user.jwt, json: { name: 'Mine' } });
      expect(created.status, created.text).to.equal(201);
      expect(await tenantIds(user.jwt)).to.deep.equal([home.id, created.body.id]);
      const members = await p.request('GET', `${owner.D}/tenants/${created.body.id}/users`, { token: owner.token });
      expect(members.body.map((u: { id: string }) => u.id)).to.deep.equal([user.id]);
    });

    it('answers 404 database_not_found for a missing database and workspace_not_found for a stranger’s', async function () {
      expectApiError(await p.request('POST', `/workspaces/${owner.slug}/databases/ghost/tenants`, { token: owner.token, json: { name: 'x' } }), 404, 'database_not_found');
      const stranger = await p.controlPlane.newDeveloper();
      const before = await tenantIds();
      expectApiError(await p.request('POST', `${owner.D}/tenants`, { token: stranger.token, json: { name: 'x' } }), 404, 'workspace_not_found');
      expect(await tenantIds()).to.deep.equal(before);
    });
  });

  describe('GET D/tenants', function () {
    it('lists every tenant, oldest first, to a developer, and only their own to a user', async function () {
      const fresh = await developerWithReadyDatabase(p);
      expect(await tenantIds(fresh.token, fresh.D)).to.deep.equal([]);
      const tenants = [];
      for (const name of ['one', 'two', 'three']) tenants.push(await createTenant(p, fresh.token, fresh.D, { name }));
      const listed = await p.request('GET', `${fresh.D}/tenants`, { token: fresh.token });
      expect(listed.status).to.equal(200);
      expect(listed.body).to.deep.equal(tenants);

      const user = await createUser(p, fresh.token, `${fresh.D}/tenants/${tenants[1].id}`);
      const own = await p.request('GET', `${fresh.D}/tenants`, { token: user.jwt });
      expect(own.status).to.equal(200);
      expect(own.body).to.deep.equal([tenants[1]]);
      expect((await p.request('PUT', `${fresh.D}/tenants/${tenants[2].id}/users/${user.id}/link`, { token: fresh.token })).status).to.equal(200);
      expect(await tenantIds(user.jwt, fresh.D)).to.deep.equal([tenants[1].id, tenants[2].id]);
    });
  });

  describe('GET T', function () {
    it('answers the tenant, or 404 tenant_not_found for an unknown id', async function () {
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Visible' });
      const found = await p.request('GET', `${owner.D}/tenants/${tenant.id}`, { token: owner.token });
      expect(found.status).to.equal(200);
      expect(found.body).to.deep.equal(tenant);
      expectApiError(await p.request('GET', `${owner.D}/tenants/${randomUUID()}`, { token: owner.token }), 404, 'tenant_not_found');
    });

    it('treats the tenant id’s letter case as the same id', async function () {
      const tenant = await createTenant(p, owner.token, owner.D);
      const found = await p.request('GET', `${owner.D}/tenants/${tenant.id.toUpperCase()}`, { token: owner.token });
      expect(found.status, found.text).to.equal(200);
      expect(found.body.id).to.equal(tenant.id);
    });
  });

  describe('PUT T (rename)', function () {
    it('answers 200 with an array holding the renamed tenant', async function () {
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Old' });
      const renamed = await p.request('PUT', `${owner.D}/tenants/${tenant.id}`, { token: owner.token, json: { name: 'New' } });
      expect(renamed.status, renamed.text).to.equal(200);
      expect(renamed.body).to.be.an('array').with.length(1);
      expect(renamed.body[0]).to.include({ id: tenant.id, name: 'New', created: tenant.created });
      expect(Date.parse(renamed.body[0].updated)).to.be.at.least(Date.parse(tenant.updated));
      expect((await p.request('GET', `${owner.D}/tenants/${tenant.id}`, { token: owner.token })).body).to.deep.equal(renamed.body[0]);
    });

    it('lets a member of the tenant rename it', async function () {
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Members' });
      const member = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
      const renamed = await p.request('PUT', `${owner.D}/tenants/${tenant.id}`, { token: member.jwt, json: { name: 'Renamed by member' } });
      expect(renamed.status, renamed.text).to.equal(200);
      expect(renamed.body[0].name).to.equal('Renamed by member');
    });

    for (const [what, body] of [
      ['a missing name', {}],
      ['an empty name', { name: '' }],
      ['a null name', { name: null }],
      ['a 256-character name', { name: 'x'.repeat(256) }],
      ['a wrong type', { name: ['x'] }],
      ['an unknown field', { name: 'ok', id: randomUUID() }],
    ] as [string, unknown][]) {
      it(`refuses ${what} with 400 validation_failed and keeps the old name`, async function () {
        const tenant = await createTenant(p, owner.token, owner.D, { name: 'Keep' });
        expectApiError(await p.request('PUT', `${owner.D}/tenants/${tenant.id}`, { token: owner.token, json: body }), 400, 'validation_failed');
        expect((await p.request('GET', `${owner.D}/tenants/${tenant.id}`, { token: owner.token })).body).to.deep.equal(tenant);
      });
    }

    it('answers 404 tenant_not_found for an unknown tenant', async function () {
      expectApiError(await p.request('PUT', `${owner.D}/tenants/${randomUUID()}`, { token: owner.token, json: { name: 'x' } }), 404, 'tenant_not_found');
    });
  });

  describe('DELETE T', function () {
    it('answers 204, and the tenant and its memberships are gone at once', async function () {
      const tenant = await createTenant(p, owner.token, owner.D);
      const other = await createTenant(p, owner.token, owner.D);
      const T = `${owner.D}/tenants/${tenant.id}`;
      const member = await createUser(p, owner.token, T);
      expect(await tenantIds(member.jwt)).to.deep.equal([tenant.id]);

      const deleted = await p.request('DELETE', T, { token: owner.token });
      expect(deleted.status).to.equal(204);
      expect(deleted.text).to.equal('');

      expectApiError(await p.request('GET', T, { token: owner.token }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', `${T}/users`, { token: owner.token }), 404, 'tenant_not_found');
      expectApiError(await p.request('PUT', T, { token: owner.token, json: { name: 'zombie' } }), 404, 'tenant_not_found');
      expectApiError(await p.request('DELETE', T, { token: owner.token }), 404, 'tenant_not_found');
      expect(await tenantIds()).not.to.include(tenant.id);
      expect(await tenantIds()).to.include(other.id);

      // The former member: the tenant is gone from every view, with the token they already hold.
      expect(await tenantIds(member.jwt)).to.deep.equal([]);
      expectApiError(await p.request('GET', T, { token: member.jwt }), 404, 'tenant_not_found');
      expectApiError(await p.request('GET', `${T}/users`, { token: member.jwt }), 404, 'tenant_not_found');
      const me = await p.request('GET', `${owner.D}/users/me`, { token: member.jwt });
      expect(me.status).to.equal(200);
      expect(me.body.tenants).to.deep.equal([]);
      const theirs = await p.request('GET', `${owner.D}/users/${member.id}/tenants`, { token: owner.token });
      expect(theirs.body).to.deep.equal([]);
      expectApiError(await p.request('POST', `${T}/users/login`, { json: { email: member.email, password: member.password } }), 401, 'authentication_failed');
      // A later membership elsewhere is not haunted by the old one.
      expect((await p.request('PUT', `${owner.D}/tenants/${other.id}/users/${member.id}/link`, { token: owner.token })).status).to.equal(200);
      expect(await tenantIds(member.jwt)).to.deep.equal([other.id]);
    });

    it('answers 403 developer_token_required to a member, and keeps the tenant', async function () {
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Sturdy' });
      const T = `${owner.D}/tenants/${tenant.id}`;
      const member = await createUser(p, owner.token, T);
      expectApiError(await p.request('DELETE', T, { token: member.jwt }), 403, 'developer_token_required');
      expect((await p.request('GET', T, { token: owner.token })).body).to.deep.equal(tenant);
      expect(await tenantIds(member.jwt)).to.deep.equal([tenant.id]);
    });

    it('answers 404 tenant_not_found for an unknown tenant', async function () {
      expectApiError(await p.request('DELETE', `${owner.D}/tenants/${randomUUID()}`, { token: owner.token }), 404, 'tenant_not_found');
    });
  });

  describe('path validation', function () {
    for (const bad of ['not-a-uuid', '1234', `${'a'.repeat(8)}-aaaa-aaaa-aaaa-${'g'.repeat(12)}`]) {
      it(`answers 400 validation_failed for the tenant id '${bad}' on every tenant route`, async function () {
        const T = `${owner.D}/tenants/${bad}`;
        const before = await tenantIds();
        for (const [method, path, json] of [
          ['GET', T, undefined],
          ['PUT', T, { name: 'x' }],
          ['DELETE', T, undefined],
          ['GET', `${T}/users`, undefined],
          ['POST', `${T}/users`, { email: uniqueEmail(), password: TEST_PASSWORD }],
          ['GET', `${T}/users/${randomUUID()}`, undefined],
          ['PUT', `${T}/users/${randomUUID()}/link`, undefined],
          ['DELETE', `${T}/users/${randomUUID()}/link`, undefined],
        ] as [string, string, unknown][]) {
          const response = await p.request(method, path, { token: owner.token, json });
          expect(response.status, `${method} ${path}`).to.equal(400);
          expectApiError(response, 400, 'validation_failed');
        }
        expectApiError(await p.request('POST', `${T}/users/login`, { json: { email: uniqueEmail(), password: TEST_PASSWORD } }), 400, 'validation_failed');
        expect(await tenantIds()).to.deep.equal(before);
      });
    }
  });

  describe('a database that is not READY', function () {
    let workspace: Awaited<ReturnType<typeof developerWithWorkspace>>;
    let databaseId: string;
    const name = uniqueDatabaseName('pending');

    before(async function () {
      workspace = await developerWithWorkspace(p);
      databaseId = randomUUID();
      // Written straight into the control plane with a provisioning attempt far in the future,
      // so that no provisioner builds it while the tests run: it stays REQUESTED for sure.
      await controlPlaneQuery(
        p,
        `insert into databases (id, workspace_id, name, region, status, physical_name, created, updated, next_attempt_at)
         values ($1, $2, $3, 'AWS_US_WEST_2', 'REQUESTED', $4, now(), now(), now() + interval '1 day')`,
        [databaseId, workspace.workspace.id, name, `db_never_built_${randomBytes(8).toString('hex')}`],
      );
    });

    after(async function () {
      if (databaseId) await controlPlaneQuery(p, 'delete from databases where id = $1', [databaseId]);
    });

    it('is REQUESTED as the tests run', async function () {
      const found = await p.request('GET', `/workspaces/${workspace.slug}/databases/${name}`, { token: workspace.token });
      expect(found.status).to.equal(200);
      expect(found.body).to.include({ id: databaseId, status: 'REQUESTED' });
    });

    it('answers 409 database_not_ready on every tenant and user route of a developer', async function () {
      const D = `/workspaces/${workspace.slug}/databases/${name}`;
      const T = `${D}/tenants/${randomUUID()}`;
      const userId = randomUUID();
      for (const [method, path, json] of [
        ['GET', `${D}/tenants`, undefined],
        ['POST', `${D}/tenants`, { name: 'early' }],
        ['GET', T, undefined],
        ['PUT', T, { name: 'early' }],
        ['DELETE', T, undefined],
        ['GET', `${T}/users`, undefined],
        ['POST', `${T}/users`, { email: uniqueEmail(), password: TEST_PASSWORD }],
        ['GET', `${T}/users/${userId}`, undefined],
        ['PUT', `${T}/users/${userId}/link`, undefined],
        ['DELETE', `${T}/users/${userId}/link`, undefined],
        ['GET', `${D}/users/${userId}`, undefined],
        ['PUT', `${D}/users/${userId}`, { name: 'x' }],
        ['GET', `${D}/users/${userId}/tenants`, undefined],
      ] as [string, string, unknown][]) {
        const response = await p.request(method, path, { token: workspace.token, json });
        expect(response.status, `${method} ${path}: ${response.text}`).to.equal(409);
        expectApiError(response, 409, 'database_not_ready');
      }
    });

    it('answers sign-ins to it with 401 authentication_failed', async function () {
      const D = `/workspaces/${workspace.slug}/databases/${name}`;
      const credentials = { email: uniqueEmail(), password: TEST_PASSWORD };
      expectApiError(await p.request('POST', `${D}/users/login`, { json: credentials }), 401, 'authentication_failed');
      expectApiError(await p.request('POST', `${D}/tenants/${randomUUID()}/users/login`, { json: credentials }), 401, 'authentication_failed');
    });

    it('answers the v2 create-user with 401, whatever the cookie', async function () {
      const response = await p.request('POST', `/v2/databases/${databaseId}/tenants/${randomUUID()}/users`, {
        json: { email: uniqueEmail(), password: TEST_PASSWORD },
        headers: { cookie: `auth.session-token=${randomBytes(32).toString('base64url')}` },
      });
      expectApiError(response, 401);
    });
  });
});
