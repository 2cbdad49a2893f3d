import { expect } from 'chai';
import { issueClientToken, issueDeveloperToken } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { createDatabase, developerWithWorkspace, expectApiError, uniqueDatabaseName } from '@platform/test-fixtures';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

/** What management tokens need to read and to write. */
const SCOPES = ['api:read', 'api:write'];

interface Member {
  developerId: string;
  email: string;
  name: string | null;
  role: 'owner' | 'member';
  added: string;
}

describe('workspace members', function () {
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  type Developer = Awaited<ReturnType<TestPlatform['controlPlane']['newDeveloper']>>;

  /** A workspace with its owner, and a developer who has an account but is not in it yet. */
  async function team() {
    const owner = await developerWithWorkspace(p);
    const other = await p.controlPlane.newDeveloper();
    return { owner, other, W: `/workspaces/${owner.slug}` };
  }

  async function add(W: string, token: string, email: string, role?: 'owner' | 'member') {
    const added = await p.request('POST', `${W}/members`, { token, json: role ? { email, role } : { email } });
    expect(added.status, added.text).to.equal(201);
    return added.body as Member;
  }

  /** developerId -> role, as the owner (or another member) sees it. */
  async function roles(W: string, token: string): Promise<Record<string, string>> {
    const listed = await p.request('GET', `${W}/members`, { token });
    expect(listed.status, listed.text).to.equal(200);
    return Object.fromEntries((listed.body as Member[]).map((member) => [member.developerId, member.role]));
  }

  /** Roles read straight from the control plane, whoever may still see the workspace. */
  async function storedRoles(slug: string): Promise<Record<string, string>> {
    const rows = await p.controlPlane.orm.em
      .fork()
      .execute<{ developer_id: string; role: string }[]>(
        'select m.developer_id, m.role from workspace_members m join workspaces w on w.id = m.workspace_id where w.slug = ?',
        [slug],
      );
    return Object.fromEntries(rows.map((row) => [row.developer_id, row.role]));
  }

  describe('GET /workspaces/{slug}/members', function () {
    it('lists the creator as the owner, with the documented fields', async function () {
      const { owner, W } = await team();
      const listed = await p.request('GET', `${W}/members`, { token: owner.token });
      expect(listed.status).to.equal(200);
      expect(listed.body).to.have.length(1);
      const [member] = listed.body as Member[];
      expect(member).to.have.all.keys('developerId', 'email', 'name', 'role', 'added');
      expect(member).to.include({ developerId: owner.developer.id, email: owner.developer.email, name: null, role: 'owner' });
      expect(new Date(member.added).toISOString()).to.equal(member.added);
    });

    it('answers 404 to a developer outside the workspace exactly as for a missing workspace', async function () {
      const { other, W, owner } = await team();
      const hidden = await p.request('GET', `${W}/members`, { token: other.token });
      const missing = await p.request('GET', `${W}-missing/members`, { token: other.token });
      expectApiError(hidden, 404, 'workspace_not_found');
      expectApiError(missing, 404, 'workspace_not_found');
      expect(hidden.body.message.replace(owner.slug, 'X')).to.equal(missing.body.message.replace(`${owner.slug}-missing`, 'X'));
    });

    it('answers 401 without a token', async function () {
      const { W } = await team();
      expectApiError(await p.request('GET', `${W}/members`), 401, 'unauthorized');
      expectApiError(await p.request('POST', `${W}/members`, { json: { email: 'x@example.test' } }), 401, 'unauthorized');
    });
  });

  describe('POST /workspaces/{slug}/members', function () {
    it('adds an existing developer as a member, who then sees the workspace and its databases', async function () {
      const { owner, other, W } = await team();
      const databaseName = uniqueDatabaseName();
      await createDatabase(p, owner.token, owner.slug, databaseName);
      expectApiError(await p.request('GET', W, { token: other.token }), 404, 'workspace_not_found');

      const added = await add(W, owner.token, other.email);
      expect(added).to.have.all.keys('developerId', 'email', 'name', 'role', 'added');
      expect(added).to.include({ developerId: other.id, email: other.email, name: null, role: 'member' });

      const workspace = await p.request('GET', W, { token: other.token });
      expect(workspace.status).to.equal(200);
      expect(workspace.body).to.deep.equal(owner.workspace);
      const mine = await p.request('GET', '/workspaces', { token: other.token });
      expect(mine.body.map((w: { slug: string }) => w.slug)).to.deep.equal([owner.slug]);
      const databases = await p.request('GET', `${W}/databases`, { token: other.token });
      expect(databases.status).to.equal(200);
      expect(databases.body.map((d: { name: string }) => d.name)).to.deep.equal([databaseName]);
      expect((await p.request('GET', `${W}/databases/${databaseName}`, { token: other.token })).status).to.equal(200);
      expect(await roles(W, other.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
    });

    it('matches the email case-insensitively', async function () {
      const { owner, other, W } = await team();
      const added = await add(W, owner.token, other.email.toUpperCase());
      expect(added).to.include({ developerId: other.id, email: other.email });
    });

    it('adds an owner when asked, who may then add others', async function () {
      const { owner, other, W } = await team();
      expect((await add(W, owner.token, other.email, 'owner')).role).to.equal('owner');
      const third = await p.controlPlane.newDeveloper();
      expect((await add(W, other.token, third.email)).role).to.equal('member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'owner', [third.id]: 'member' });
    });

    it('answers 404 developer_not_found for an email without an account, and adds nobody', async function () {
      const { owner, W } = await team();
      const response = await p.request('POST', `${W}/members`, { token: owner.token, json: { email: 'nobody-at-all@example.test' } });
      expectApiError(response, 404, 'developer_not_found');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
    });

    it('answers 409 already_member for a member, and changes no role', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      expectApiError(await p.request('POST', `${W}/members`, { token: owner.token, json: { email: other.email, role: 'owner' } }), 409, 'already_member');
      expectApiError(await p.request('POST', `${W}/members`, { token: owner.token, json: { email: owner.developer.email } }), 409, 'already_member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
    });

    const badBodies: [string, unknown, RegExp][] = [
      ['a missing email', {}, /body\.email: is required/],
      ['an email that is not one', { email: 'not-an-email' }, /body\.email/],
      ['an email with spaces', { email: 'a b@example.test' }, /body\.email/],
      ['an email of the wrong type', { email: 42 }, /body\.email: expected string/],
      ['an email over 320 characters', { email: `${'x'.repeat(320)}@example.test` }, /body\.email/],
      ['an unknown role', { email: 'a@example.test', role: 'admin' }, /body\.role/],
      ['an unknown field', { email: 'a@example.test', developerId: 'x' }, /body\.developerId: unknown field/],
      ['an array', [{ email: 'a@example.test' }], /body: expected object/],
    ];
    for (const [what, body, message] of badBodies) {
      it(`refuses ${what} with 400 validation_failed and adds nobody`, async function () {
        const { owner, other, W } = await team();
        const json = JSON.parse(JSON.stringify(body).replace('a@example.test', other.email));
        const response = await p.request('POST', `${W}/members`, { token: owner.token, json });
        expectApiError(response, 400, 'validation_failed');
        expect(response.body.message).to.match(message);
        expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
      });
    }
  });

  describe('what a member may do', function () {
    async function withMember() {
      const t = await team();
      await add(t.W, t.owner.token, t.other.email);
      const third = await p.controlPlane.newDeveloper();
      await add(t.W, t.owner.token, third.email);
      return { ...t, member: t.other, third };
    }

    it('a member may list the members but not add, change or remove others (403 owner_required)', async function () {
      const { owner, member, third, W } = await withMember();
      const before = await roles(W, member.token);
      const outsider = await p.controlPlane.newDeveloper();
      expectApiError(await p.request('POST', `${W}/members`, { token: member.token, json: { email: outsider.email } }), 403, 'owner_required');
      // Whether an email has an account is the owners' to learn.
      expectApiError(await p.request('POST', `${W}/members`, { token: member.token, json: { email: 'nobody-at-all@example.test' } }), 403, 'owner_required');
      expectApiError(await p.request('PATCH', `${W}/members/${third.id}`, { token: member.token, json: { role: 'owner' } }), 403, 'owner_required');
      expectApiError(await p.request('PATCH', `${W}/members/${member.id}`, { token: member.token, json: { role: 'owner' } }), 403, 'owner_required');
      expectApiError(await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: member.token, json: { role: 'member' } }), 403, 'owner_required');
      expectApiError(await p.request('DELETE', `${W}/members/${third.id}`, { token: member.token }), 403, 'owner_required');
      expectApiError(await p.request('DELETE', `${W}/members/${owner.developer.id}`, { token: member.token }), 403, 'owner_required');
      expect(await roles(W, owner.token)).to.deep.equal(before);
    });

    it('a member may leave, and the workspace vanishes for them at once', async function () {
      const { owner, member, W } = await withMember();
      const left = await p.request('DELETE', `${W}/members/${member.id}`, { token: member.token });
      expect(left.status, left.text).to.equal(204);
      expect(left.text).to.equal('');
      expectApiError(await p.request('GET', W, { token: member.token }), 404, 'workspace_not_found');
      expect(await roles(W, owner.token)).not.to.have.property(member.id);
    });

    it('a developer outside the workspace gets 404 on every member route, as for a missing workspace', async function () {
      const { owner, member, W } = await withMember();
      const outsider = await p.controlPlane.newDeveloper();
      const before = await roles(W, owner.token);
      for (const [method, path, json] of [
        ['GET', `${W}/members`, undefined],
        ['POST', `${W}/members`, { email: outsider.email }],
        ['POST', `${W}/members`, { email: 'nobody-at-all@example.test' }],
        ['PATCH', `${W}/members/${member.id}`, { role: 'owner' }],
        ['PATCH', `${W}/members/${outsider.id}`, { role: 'owner' }],
        ['DELETE', `${W}/members/${member.id}`, undefined],
        ['DELETE', `${W}/members/${outsider.id}`, undefined],
      ] as const) {
        const response = await p.request(method, path, { token: outsider.token, json });
        expectApiError(response, 404, 'workspace_not_found');
        expect(response.body.message).to.equal(`Workspace '${owner.slug}' not found`);
      }
      expect(await roles(W, owner.token)).to.deep.equal(before);
    });
  });

  describe('PATCH and DELETE /workspaces/{slug}/members/{developerId}', function () {
    it('an owner promotes and demotes a member', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      const promoted = await p.request('PATCH', `${W}/members/${other.id}`, { token: owner.token, json: { role: 'owner' } });
      expect(promoted.status, promoted.text).to.equal(200);
      expect(promoted.body).to.include({ developerId: other.id, email: other.email, role: 'owner' });
      const demoted = await p.request('PATCH', `${W}/members/${other.id}`, { token: owner.token, json: { role: 'member' } });
      expect(demoted.status).to.equal(200);
      expect(demoted.body.role).to.equal('member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
    });

    it('accepts a developer id in capitals', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      const promoted = await p.request('PATCH', `${W}/members/${other.id.toUpperCase()}`, { token: owner.token, json: { role: 'owner' } });
      expect(promoted.status, promoted.text).to.equal(200);
      expect(promoted.body.developerId).to.equal(other.id);
    });

    it('removing a member makes the workspace and its databases vanish for them at once (404)', async function () {
      const { owner, other, W } = await team();
      const databaseName = uniqueDatabaseName();
      await createDatabase(p, owner.token, owner.slug, databaseName);
      await add(W, owner.token, other.email);
      expect((await p.request('GET', `${W}/databases/${databaseName}`, { token: other.token })).status).to.equal(200);

      const removed = await p.request('DELETE', `${W}/members/${other.id}`, { token: owner.token });
      expect(removed.status, removed.text).to.equal(204);
      expectApiError(await p.request('GET', W, { token: other.token }), 404, 'workspace_not_found');
      expectApiError(await p.request('GET', `${W}/members`, { token: other.token }), 404, 'workspace_not_found');
      expectApiError(await p.request('GET', `${W}/databases`, { token: other.token }), 404, 'workspace_not_found');
      expectApiError(await p.request('GET', `${W}/databases/${databaseName}`, { token: other.token }), 404, 'workspace_not_found');
      expect((await p.request('GET', '/workspaces', { token: other.token })).body).to.deep.equal([]);
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
    });

    it('the last owner can neither leave nor be demoted (409 last_owner)', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      expectApiError(await p.request('DELETE', `${W}/members/${owner.developer.id}`, { token: owner.token }), 409, 'last_owner');
      expectApiError(await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: owner.token, json: { role: 'member' } }), 409, 'last_owner');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
      // Setting the role they have changes nothing and is fine.
      const same = await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: owner.token, json: { role: 'owner' } });
      expect(same.status).to.equal(200);
    });

    it('an owner may step down or leave once another owner exists', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email, 'owner');
      const stepped = await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: owner.token, json: { role: 'member' } });
      expect(stepped.status, stepped.text).to.equal(200);
      expectApiError(await p.request('DELETE', `${W}/members/${other.id}`, { token: other.token }), 409, 'last_owner');
      const left = await p.request('DELETE', `${W}/members/${owner.developer.id}`, { token: owner.token });
      expect(left.status, left.text).to.equal(204);
      expect(await roles(W, other.token)).to.deep.equal({ [other.id]: 'owner' });
    });

    it('answers 404 member_not_found for a developer who does not belong to the workspace', async function () {
      const { owner, other, W } = await team();
      expectApiError(await p.request('PATCH', `${W}/members/${other.id}`, { token: owner.token, json: { role: 'owner' } }), 404, 'member_not_found');
      expectApiError(await p.request('DELETE', `${W}/members/${other.id}`, { token: owner.token }), 404, 'member_not_found');
      expectApiError(await p.request('DELETE', `${W}/members/00000000-0000-4000-8000-000000000000`, { token: owner.token }), 404, 'member_not_found');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
    });

    const badRequests: [string, string, string | null, unknown, RegExp][] = [
      ['an unknown role', 'PATCH', null, { role: 'admin' }, /body\.role/],
      ['a missing role', 'PATCH', null, {}, /body\.role: is required/],
      ['a null role', 'PATCH', null, { role: null }, /body\.role/],
      ['an unknown field', 'PATCH', null, { role: 'owner', email: 'x@example.test' }, /body\.email: unknown field/],
      ['a developer id that is not a UUID', 'PATCH', 'not-a-uuid', { role: 'owner' }, /path\.developerId/],
      ['a developer id that is not a UUID', 'DELETE', 'not-a-uuid', undefined, /path\.developerId/],
    ];
    for (const [what, method, developerId, json, message] of badRequests) {
      it(`${method} refuses ${what} with 400 validation_failed and changes nothing`, async function () {
        const { owner, other, W } = await team();
        await add(W, owner.token, other.email);
        const response = await p.request(method, `${W}/members/${developerId ?? other.id}`, { token: owner.token, json });
        expectApiError(response, 400, 'validation_failed');
        expect(response.body.message).to.match(message);
        expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
      });
    }
  });

  describe('concurrent changes', function () {
    async function twoOwners() {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email, 'owner');
      return { a: { id: owner.developer.id, token: owner.token }, b: { id: other.id, token: other.token }, W, slug: owner.slug };
    }

    const owners = (stored: Record<string, string>) => Object.values(stored).filter((role) => role === 'owner').length;

    it('two owners demoting each other at once leave one owner', async function () {
      for (let round = 0; round < 5; round++) {
        const { a, b, W, slug } = await twoOwners();
        const responses = await Promise.all([
          p.request('PATCH', `${W}/members/${b.id}`, { token: a.token, json: { role: 'member' } }),
          p.request('PATCH', `${W}/members/${a.id}`, { token: b.token, json: { role: 'member' } }),
        ]);
        const statuses = responses.map((response) => response.status).sort();
        // The later one finds its caller demoted already: only owners change roles.
        expect(statuses, responses.map((response) => response.text).join(' ')).to.deep.equal([200, 403]);
        expect(owners(await storedRoles(slug))).to.equal(1);
      }
    });

    it('two owners stepping down at once leave one owner (the later gets 409 last_owner)', async function () {
      for (let round = 0; round < 5; round++) {
        const { a, b, W, slug } = await twoOwners();
        const responses = await Promise.all([
          p.request('PATCH', `${W}/members/${a.id}`, { token: a.token, json: { role: 'member' } }),
          p.request('PATCH', `${W}/members/${b.id}`, { token: b.token, json: { role: 'member' } }),
        ]);
        expect(responses.map((response) => response.status).sort()).to.deep.equal([200, 409]);
        expectApiError(responses.find((response) => response.status === 409)!, 409, 'last_owner');
        expect(owners(await storedRoles(slug))).to.equal(1);
      }
    });

    it('two owners leaving at once leave one owner', async function () {
      for (let round = 0; round < 5; round++) {
        const { a, b, W, slug } = await twoOwners();
        const responses = await Promise.all([
          p.request('DELETE', `${W}/members/${a.id}`, { token: a.token }),
          p.request('DELETE', `${W}/members/${b.id}`, { token: b.token }),
        ]);
        expect(responses.map((response) => response.status).sort()).to.deep.equal([204, 409]);
        const stored = await storedRoles(slug);
        expect(Object.values(stored)).to.deep.equal(['owner']);
      }
    });

    it('two owners removing each other at once leave one owner', async function () {
      const { a, b, W, slug } = await twoOwners();
      const responses = await Promise.all([
        p.request('DELETE', `${W}/members/${b.id}`, { token: a.token }),
        p.request('DELETE', `${W}/members/${a.id}`, { token: b.token }),
      ]);
      // The later one finds its caller gone: the workspace no longer exists for them.
      expect(responses.map((response) => response.status).sort()).to.deep.equal([204, 404]);
      expectApiError(responses.find((response) => response.status === 404)!, 404, 'workspace_not_found');
      expect(Object.values(await storedRoles(slug))).to.deep.equal(['owner']);
    });
  });

  describe('OAuth clients are the owners’ to change (issue 11, finding 6)', function () {
    it('a plain member may list the clients but not register one, replace a secret or delete one (403 owner_required)', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      const registered = await p.request('POST', `${W}/oauth-clients`, { token: owner.token, json: { name: 'Bot', type: 'confidential' } });
      expect(registered.status, registered.text).to.equal(201);
      const id = registered.body.client_id;
      expect((await p.request('GET', `${W}/oauth-clients`, { token: other.token })).body.map((client: { client_id: string }) => client.client_id)).to.deep.equal([id]);
      expectApiError(await p.request('POST', `${W}/oauth-clients`, { token: other.token, json: { name: 'Mine', type: 'confidential' } }), 403, 'owner_required');
      expectApiError(await p.request('POST', `${W}/oauth-clients/${id}/secret`, { token: other.token }), 403, 'owner_required');
      expectApiError(await p.request('DELETE', `${W}/oauth-clients/${id}`, { token: other.token }), 403, 'owner_required');
      // Nothing was registered or deleted.
      const listed = await p.request('GET', `${W}/oauth-clients`, { token: owner.token });
      expect(listed.body.map((client: { client_id: string }) => client.client_id)).to.deep.equal([id]);
    });
  });

  describe('OAuth client tokens', function () {
    it('a client of the workspace may list the members but not change them (403 developer_token_required)', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      const registered = await p.request('POST', `${W}/oauth-clients`, { token: owner.token, json: { name: 'Bot', type: 'confidential' } });
      expect(registered.status, registered.text).to.equal(201);
      const { token } = await issueClientToken(
        p.controlPlane.keys,
        { issuer: TEST_ISSUER, audience: TEST_AUDIENCE, clock: systemClock },
        { clientId: registered.body.client_id, workspaceId: owner.workspace.id, scopes: SCOPES, ttlSeconds: 600 },
      );
      const before = await roles(W, owner.token);
      expect(await roles(W, token)).to.deep.equal(before);

      const third = await p.controlPlane.newDeveloper();
      expectApiError(await p.request('POST', `${W}/members`, { token, json: { email: third.email } }), 403, 'developer_token_required');
      expectApiError(await p.request('PATCH', `${W}/members/${other.id}`, { token, json: { role: 'owner' } }), 403, 'developer_token_required');
      expectApiError(await p.request('DELETE', `${W}/members/${other.id}`, { token }), 403, 'developer_token_required');
      expect(await roles(W, owner.token)).to.deep.equal(before);

      const elsewhere = await developerWithWorkspace(p);
      expectApiError(await p.request('GET', `/workspaces/${elsewhere.slug}/members`, { token }), 404, 'workspace_not_found');
    });
  });

  describe('a developer token bound to one workspace', function () {
    async function boundToken(developer: Developer | { id: string }, workspaceId: string) {
      const issued = await issueDeveloperToken(
        p.controlPlane.keys,
        { issuer: TEST_ISSUER, audience: TEST_AUDIENCE, clock: systemClock },
        { developerId: developer.id, clientId: 'tests', scopes: SCOPES, ttlSeconds: 600, workspaceId },
      );
      return issued.token;
    }

    it('reaches that workspace only, and cannot create workspaces', async function () {
      const first = await developerWithWorkspace(p);
      const secondSlug = `${first.slug}-two`;
      expect((await p.request('POST', '/workspaces', { token: first.token, json: { name: 'Two', slug: secondSlug } })).status).to.equal(201);
      const token = await boundToken(first.developer, first.workspace.id);

      const listed = await p.request('GET', '/workspaces', { token });
      expect(listed.status).to.equal(200);
      expect(listed.body.map((w: { slug: string }) => w.slug)).to.deep.equal([first.slug]);
      expect((await p.request('GET', `/workspaces/${first.slug}`, { token })).status).to.equal(200);
      expect((await p.request('GET', `/workspaces/${first.slug}/members`, { token })).status).to.equal(200);
      expectApiError(await p.request('GET', `/workspaces/${secondSlug}`, { token }), 404, 'workspace_not_found');
      expectApiError(await p.request('GET', `/workspaces/${secondSlug}/databases`, { token }), 404, 'workspace_not_found');
      expectApiError(await p.request('GET', `/workspaces/${secondSlug}/members`, { token }), 404, 'workspace_not_found');
      expectApiError(await p.request('POST', '/workspaces', { token, json: { name: 'Three' } }), 403, 'workspace_bound_token');
      expect((await p.request('GET', '/workspaces', { token: first.token })).body).to.have.length(2);
    });

    it('loses the workspace when its developer is removed from it', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other.email);
      const token = await boundToken(other, owner.workspace.id);
      expect((await p.request('GET', '/workspaces', { token })).body).to.have.length(1);
      expect((await p.request('DELETE', `${W}/members/${other.id}`, { token: owner.token })).status).to.equal(204);
      expect((await p.request('GET', '/workspaces', { token })).body).to.deep.equal([]);
      expectApiError(await p.request('GET', W, { token }), 404, 'workspace_not_found');
    });
  });

  it('documents the member routes in /openapi.json', async function () {
    const { body } = await p.request('GET', '/openapi.json');
    const members = body.paths['/workspaces/{workspaceSlug}/members'];
    const member = body.paths['/workspaces/{workspaceSlug}/members/{developerId}'];
    expect(members).to.have.all.keys('get', 'post');
    expect(member).to.include.all.keys('patch', 'delete');
    expect(members.post.requestBody.content['application/json'].schema.properties.role.enum).to.deep.equal(['owner', 'member']);
    expect(members.post.description).to.match(/case-insensitively/);
    expect(member.patch.description).to.match(/last_owner/);
    expect(member.delete.responses).to.include.all.keys('204', '403', '404', '409');
    expect(body.paths['/workspaces'].post.responses).to.have.property('403');
  });
});
