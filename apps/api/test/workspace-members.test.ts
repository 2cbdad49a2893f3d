import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
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

  /**
   * How a developer joins: an owner's invitation, accepted by its invitee. An owner is a member the
   * inviting owner promotes, since invitations make members only.
   */
  async function add(W: string, token: string, invitee: { id: string; email: string; token: string }, role?: 'owner' | 'member') {
    const invited = await p.request('POST', `${W}/invitations`, { token, json: { email: invitee.email } });
    expect(invited.status, invited.text).to.equal(201);
    const accepted = await p.request('POST', `/developers/me/invitations/${invited.body.id}/accept`, { token: invitee.token });
    expect(accepted.status, accepted.text).to.equal(200);
    if (role !== 'owner') return accepted.body.member as Member;
    const promoted = await p.request('PATCH', `${W}/members/${invitee.id}`, { token, json: { role: 'owner' } });
    expect(promoted.status, promoted.text).to.equal(200);
    return promoted.body as Member;
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
      expectApiError(await p.request('POST', `${W}/invitations`, { json: { email: 'x@example.test' } }), 401, 'unauthorized');
    });
  });

  describe('invitations', function () {
    const DAY_MS = 24 * 60 * 60 * 1000;
    const INVITATION_FIELDS = ['created', 'email', 'expires', 'id', 'role'];

    async function invite(W: string, token: string, email: string, role?: 'member') {
      const invited = await p.request('POST', `${W}/invitations`, { token, json: role ? { email, role } : { email } });
      expect(invited.status, invited.text).to.equal(201);
      return invited.body as { id: string; email: string; role: string; created: string; expires: string };
    }

    const accept = (token: string, id: string) => p.request('POST', `/developers/me/invitations/${id}/accept`, { token });
    const notFound = (id: string) => ({ errorCode: 'invitation_not_found', message: `Invitation '${id}' not found`, statusCode: 404 });
    const unknownEmail = () => `nobody-${randomBytes(4).toString('hex')}@example.test`;

    it('answers an invitation of a registered email and of an unknown one alike, and adds nobody until it is accepted', async function () {
      const { owner, other, W } = await team();
      const registered = await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: other.email } });
      const unknown = await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: unknownEmail() } });
      for (const [answer, email] of [
        [registered, other.email],
        [unknown, unknown.body.email],
      ] as const) {
        expect(answer.status, answer.text).to.equal(201);
        expect(Object.keys(answer.body).sort()).to.deep.equal(INVITATION_FIELDS);
        const created = answer.body.created as string;
        expect(answer.body).to.deep.equal({ id: answer.body.id, email, role: 'member', created, expires: new Date(Date.parse(created) + 7 * DAY_MS).toISOString() });
        expect(answer.body.id).to.match(/^[0-9a-f-]{36}$/);
      }
      const headerNames = (answer: typeof registered) => [...answer.headers.keys()].sort();
      expect(headerNames(registered)).to.deep.equal(headerNames(unknown));
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
      expectApiError(await p.request('GET', W, { token: other.token }), 404, 'workspace_not_found');
      const pending = await p.request('GET', `${W}/invitations`, { token: owner.token });
      expect(pending.status).to.equal(200);
      expect(pending.body).to.deep.equal([registered.body, unknown.body]);
    });

    it('the invitee sees it (the email matched case-insensitively), accepts, and becomes a member who sees the workspace and its databases', async function () {
      const { owner, other, W } = await team();
      const databaseName = uniqueDatabaseName();
      await createDatabase(p, owner.token, owner.slug, databaseName);
      const invitation = await invite(W, owner.token, other.email.toUpperCase());
      const mine = await p.request('GET', '/developers/me/invitations', { token: other.token });
      expect(mine.status, mine.text).to.equal(200);
      expect(mine.body).to.deep.equal([{ ...invitation, workspace: { id: owner.workspace.id, name: owner.workspace.name, slug: owner.slug } }]);
      expect((await p.request('GET', '/developers/me/invitations', { token: owner.token })).body).to.deep.equal([]);

      const accepted = await accept(other.token, invitation.id);
      expect(accepted.status, accepted.text).to.equal(200);
      expect(accepted.body).to.deep.equal({
        workspace: owner.workspace,
        member: { developerId: other.id, email: other.email, name: null, role: 'member', added: accepted.body.member.added },
      });
      expect((await p.request('GET', W, { token: other.token })).body).to.deep.equal(owner.workspace);
      expect((await p.request('GET', `${W}/databases`, { token: other.token })).body.map((d: { name: string }) => d.name)).to.deep.equal([databaseName]);
      expect(await roles(W, other.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
      expect((await p.request('GET', '/developers/me/invitations', { token: other.token })).body).to.deep.equal([]);
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([]);
      const again = await accept(other.token, invitation.id);
      expect(again.status).to.equal(404);
      expect(again.body).to.deep.equal(notFound(invitation.id));
    });

    it('makes members only: `owner` is refused with 400 (emails are not verified), and an owner promotes the member afterwards', async function () {
      const { owner, other, W } = await team();
      const refused = await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: other.email, role: 'owner' } });
      expectApiError(refused, 400, 'validation_failed');
      expect(refused.body.message).to.match(/body\.role/);
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([]);
      const invitation = await invite(W, owner.token, other.email, 'member');
      expect(invitation.role).to.equal('member');
      expect((await accept(other.token, invitation.id)).body.member.role).to.equal('member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
      const promoted = await p.request('PATCH', `${W}/members/${other.id}`, { token: owner.token, json: { role: 'owner' } });
      expect(promoted.status, promoted.text).to.equal(200);
      // An owner so made may invite others, as members.
      const third = await p.controlPlane.newDeveloper();
      expect((await add(W, other.token, third)).role).to.equal('member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'owner', [third.id]: 'member' });
    });

    it('an owner invitation stored before invitations made members only shows and joins as a member', async function () {
      const { owner, other, W } = await team();
      const invitation = await invite(W, owner.token, other.email);
      await p.controlPlane.orm.em.fork().execute(`update workspace_invitations set role = 'owner' where id = ?`, [invitation.id]);
      expect((await p.request('GET', '/developers/me/invitations', { token: other.token })).body[0].role).to.equal('member');
      expect((await accept(other.token, invitation.id)).body.member.role).to.equal('member');
      expect(await storedRoles(owner.slug)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
    });

    it('holds at most 50 pending invitations per workspace: the 51st is 409 invitation_quota_exceeded and changes nothing', async function () {
      const { owner, other, W } = await team();
      const pendingOf = async () => (await p.request('GET', `${W}/invitations`, { token: owner.token })).body as { id: string }[];
      const emails = Array.from({ length: 50 }, () => unknownEmail());
      for (const email of emails) await invite(W, owner.token, email);
      const before = await pendingOf();
      expect(before).to.have.length(50);
      const refused = await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: other.email } });
      expectApiError(refused, 409, 'invitation_quota_exceeded');
      expect(refused.body.message).to.equal(`Workspace '${owner.slug}' has 50 pending invitations, its quota; revoke one or wait for one to be answered or expire`);
      expect(await pendingOf()).to.deep.equal(before);
      expect((await p.request('GET', '/developers/me/invitations', { token: other.token })).body).to.deep.equal([]);
      // Inviting a pending email again replaces its invitation; a revoked one makes room.
      const again = await invite(W, owner.token, emails[0].toUpperCase());
      expect(await pendingOf()).to.have.length(50);
      expect((await p.request('DELETE', `${W}/invitations/${again.id}`, { token: owner.token })).status).to.equal(204);
      await invite(W, owner.token, other.email);
      expectApiError(await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: unknownEmail() } }), 409, 'invitation_quota_exceeded');
    });

    it('pages the invitee’s list: a Link to the next page, which goes on after an invitation answered meanwhile', async function () {
      const invitee = await p.controlPlane.newDeveloper();
      const invitations = [];
      for (let i = 0; i < 3; i++) {
        const { owner, W } = await team();
        invitations.push({ ...(await invite(W, owner.token, invitee.email)), workspace: { id: owner.workspace.id, name: owner.workspace.name, slug: owner.slug } });
      }
      const first = await p.request('GET', '/developers/me/invitations?limit=2', { token: invitee.token });
      expect(first.status, first.text).to.equal(200);
      expect(first.body).to.deep.equal(invitations.slice(0, 2));
      const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next).to.match(/^\/developers\/me\/invitations\?limit=2&cursor=[\w-]+$/);
      expect((await p.request('POST', `/developers/me/invitations/${invitations[1].id}/decline`, { token: invitee.token })).status).to.equal(204);
      const second = await p.request('GET', next as string, { token: invitee.token });
      expect(second.body).to.deep.equal(invitations.slice(2));
      expect(second.headers.get('link')).to.equal(null);
      expectApiError(await p.request('GET', '/developers/me/invitations?cursor=bm90LWEtY3Vyc29y', { token: invitee.token }), 400, 'invalid_cursor');
    });

    it('another developer cannot accept or decline it: 404, as for an invitation that does not exist', async function () {
      const { owner, other, W } = await team();
      const invitation = await invite(W, owner.token, other.email);
      const stranger = await p.controlPlane.newDeveloper();
      for (const action of ['accept', 'decline']) {
        const taken = await p.request('POST', `/developers/me/invitations/${invitation.id}/${action}`, { token: stranger.token });
        expect(taken.status).to.equal(404);
        expect(taken.body).to.deep.equal(notFound(invitation.id));
      }
      // The owner who sent it cannot accept it for the invitee either.
      expect((await accept(owner.token, invitation.id)).body).to.deep.equal(notFound(invitation.id));
      const missing = '00000000-0000-4000-8000-000000000000';
      expect((await accept(stranger.token, missing)).body).to.deep.equal(notFound(missing));
      expect((await p.request('GET', '/developers/me/invitations', { token: stranger.token })).body).to.deep.equal([]);
      expectApiError(await p.request('GET', W, { token: stranger.token }), 404, 'workspace_not_found');
      expect((await accept(other.token, invitation.id)).status).to.equal(200);
    });

    it('an expired invitation can neither be accepted nor seen', async function () {
      const { owner, other, W } = await team();
      const invitation = await invite(W, owner.token, other.email);
      await p.controlPlane.orm.em.fork().execute(`update workspace_invitations set expires = now() - interval '1 second' where id = ?`, [invitation.id]);
      expect((await p.request('GET', '/developers/me/invitations', { token: other.token })).body).to.deep.equal([]);
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([]);
      const late = await accept(other.token, invitation.id);
      expect(late.status).to.equal(404);
      expect(late.body).to.deep.equal(notFound(invitation.id));
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
    });

    it('a revoked or declined invitation cannot be accepted', async function () {
      const { owner, other, W } = await team();
      const revoked = await invite(W, owner.token, other.email);
      const revoking = await p.request('DELETE', `${W}/invitations/${revoked.id}`, { token: owner.token });
      expect(revoking.status, revoking.text).to.equal(204);
      expect(revoking.text).to.equal('');
      expect((await accept(other.token, revoked.id)).body).to.deep.equal(notFound(revoked.id));
      const twice = await p.request('DELETE', `${W}/invitations/${revoked.id}`, { token: owner.token });
      expect(twice.status).to.equal(404);
      expect(twice.body).to.deep.equal(notFound(revoked.id));

      const declined = await invite(W, owner.token, other.email);
      const declining = await p.request('POST', `/developers/me/invitations/${declined.id}/decline`, { token: other.token });
      expect(declining.status, declining.text).to.equal(204);
      expect((await accept(other.token, declined.id)).body).to.deep.equal(notFound(declined.id));
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([]);
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
    });

    it('inviting an email again replaces its pending invitation', async function () {
      const { owner, other, W } = await team();
      const first = await invite(W, owner.token, other.email);
      const second = await invite(W, owner.token, other.email.toUpperCase(), 'member');
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([second]);
      expect((await accept(other.token, first.id)).body).to.deep.equal(notFound(first.id));
      expect((await accept(other.token, second.id)).body.member.role).to.equal('member');
    });

    it('answers 409 already_member for the email of a member (which every member can read in the member list), and changes no role', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other);
      expectApiError(await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: other.email, role: 'member' } }), 409, 'already_member');
      expectApiError(await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: owner.developer.email.toUpperCase() } }), 409, 'already_member');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
    });

    it('answers 404 on a revoke of an invitation of another workspace, which keeps it', async function () {
      const { owner, other, W } = await team();
      const elsewhere = await developerWithWorkspace(p);
      const invitation = await invite(`/workspaces/${elsewhere.slug}`, elsewhere.token, other.email);
      const revoking = await p.request('DELETE', `${W}/invitations/${invitation.id}`, { token: owner.token });
      expect(revoking.body).to.deep.equal(notFound(invitation.id));
      expect((await accept(other.token, invitation.id)).status).to.equal(200);
    });

    it('the invitee’s routes need a developer token that is not bound to a workspace', async function () {
      const { owner, other, W } = await team();
      const invitation = await invite(W, owner.token, other.email);
      const bound = await issueDeveloperToken(
        p.controlPlane.keys,
        { issuer: TEST_ISSUER, audience: TEST_AUDIENCE, clock: systemClock },
        { developerId: other.id, clientId: 'tests', scopes: SCOPES, ttlSeconds: 600, workspaceId: owner.workspace.id },
      );
      expectApiError(await p.request('GET', '/developers/me/invitations', { token: bound.token }), 403, 'workspace_bound_token');
      expectApiError(await accept(bound.token, invitation.id), 403, 'workspace_bound_token');
      expectApiError(await p.request('GET', '/developers/me/invitations'), 401, 'unauthorized');
      expectApiError(await accept('', invitation.id), 401, 'unauthorized');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
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
      it(`refuses ${what} with 400 validation_failed and invites nobody`, async function () {
        const { owner, other, W } = await team();
        const json = JSON.parse(JSON.stringify(body).replace('a@example.test', other.email));
        const response = await p.request('POST', `${W}/invitations`, { token: owner.token, json });
        expectApiError(response, 400, 'validation_failed');
        expect(response.body.message).to.match(message);
        expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([]);
      });
    }

    it('refuses an invitation id that is not a UUID with 400', async function () {
      const { other } = await team();
      expectApiError(await accept(other.token, 'not-a-uuid'), 400, 'validation_failed');
    });
  });

  describe('what a member may do', function () {
    async function withMember() {
      const t = await team();
      await add(t.W, t.owner.token, t.other);
      const third = await p.controlPlane.newDeveloper();
      await add(t.W, t.owner.token, third);
      return { ...t, member: t.other, third };
    }

    it('a member may list the members but not invite, see invitations, change or remove others (403 owner_required)', async function () {
      const { owner, member, third, W } = await withMember();
      const before = await roles(W, member.token);
      const outsider = await p.controlPlane.newDeveloper();
      const pending = await p.request('POST', `${W}/invitations`, { token: owner.token, json: { email: outsider.email } });
      expect(pending.status).to.equal(201);
      for (const [method, path, json] of [
        ['POST', `${W}/invitations`, { email: outsider.email }],
        ['POST', `${W}/invitations`, { email: 'nobody-at-all@example.test' }],
        ['GET', `${W}/invitations`, undefined],
        ['DELETE', `${W}/invitations/${pending.body.id}`, undefined],
      ] as const) {
        const response = await p.request(method, path, { token: member.token, json });
        expect(response.status, `${method} ${path}`).to.equal(403);
        expect(response.body.errorCode).to.equal('owner_required');
      }
      expect((await p.request('GET', `${W}/invitations`, { token: owner.token })).body).to.deep.equal([pending.body]);
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
        ['POST', `${W}/invitations`, { email: outsider.email }],
        ['POST', `${W}/invitations`, { email: 'nobody-at-all@example.test' }],
        ['GET', `${W}/invitations`, undefined],
        ['DELETE', `${W}/invitations/00000000-0000-4000-8000-000000000000`, undefined],
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
      await add(W, owner.token, other);
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
      await add(W, owner.token, other);
      const promoted = await p.request('PATCH', `${W}/members/${other.id.toUpperCase()}`, { token: owner.token, json: { role: 'owner' } });
      expect(promoted.status, promoted.text).to.equal(200);
      expect(promoted.body.developerId).to.equal(other.id);
    });

    it('removing a member makes the workspace and its databases vanish for them at once (404)', async function () {
      const { owner, other, W } = await team();
      const databaseName = uniqueDatabaseName();
      await createDatabase(p, owner.token, owner.slug, databaseName);
      await add(W, owner.token, other);
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
      await add(W, owner.token, other);
      expectApiError(await p.request('DELETE', `${W}/members/${owner.developer.id}`, { token: owner.token }), 409, 'last_owner');
      expectApiError(await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: owner.token, json: { role: 'member' } }), 409, 'last_owner');
      expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner', [other.id]: 'member' });
      // Setting the role they have changes nothing and is fine.
      const same = await p.request('PATCH', `${W}/members/${owner.developer.id}`, { token: owner.token, json: { role: 'owner' } });
      expect(same.status).to.equal(200);
    });

    it('an owner may step down or leave once another owner exists', async function () {
      const { owner, other, W } = await team();
      await add(W, owner.token, other, 'owner');
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
        await add(W, owner.token, other);
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
      await add(W, owner.token, other, 'owner');
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
      await add(W, owner.token, other);
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
      await add(W, owner.token, other);
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
      expectApiError(await p.request('POST', `${W}/invitations`, { token, json: { email: third.email } }), 403, 'developer_token_required');
      expectApiError(await p.request('GET', `${W}/invitations`, { token }), 403, 'developer_token_required');
      expectApiError(await p.request('GET', '/developers/me/invitations', { token }), 403, 'developer_token_required');
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
      await add(W, owner.token, other);
      const token = await boundToken(other, owner.workspace.id);
      expect((await p.request('GET', '/workspaces', { token })).body).to.have.length(1);
      expect((await p.request('DELETE', `${W}/members/${other.id}`, { token: owner.token })).status).to.equal(204);
      expect((await p.request('GET', '/workspaces', { token })).body).to.deep.equal([]);
      expectApiError(await p.request('GET', W, { token }), 404, 'workspace_not_found');
    });
  });

  it('no longer adds a member directly: POST on the member list is 405', async function () {
    const { owner, other, W } = await team();
    expectApiError(await p.request('POST', `${W}/members`, { token: owner.token, json: { email: other.email } }), 405, 'method_not_allowed');
    expect(await roles(W, owner.token)).to.deep.equal({ [owner.developer.id]: 'owner' });
  });

  it('documents the member and invitation routes in /openapi.json', async function () {
    const { body } = await p.request('GET', '/openapi.json');
    const members = body.paths['/workspaces/{workspaceSlug}/members'];
    const member = body.paths['/workspaces/{workspaceSlug}/members/{developerId}'];
    const invitations = body.paths['/workspaces/{workspaceSlug}/invitations'];
    expect(members).to.have.all.keys('get');
    expect(member).to.include.all.keys('patch', 'delete');
    expect(invitations).to.have.all.keys('get', 'post');
    expect(body.paths['/workspaces/{workspaceSlug}/invitations/{invitationId}']).to.have.all.keys('delete');
    expect(body.paths['/developers/me/invitations']).to.have.all.keys('get');
    expect(body.paths['/developers/me/invitations/{invitationId}/accept']).to.have.all.keys('post');
    expect(body.paths['/developers/me/invitations/{invitationId}/decline']).to.have.all.keys('post');
    expect(invitations.post.requestBody.content['application/json'].schema.properties.role.enum).to.deep.equal(['member']);
    expect(invitations.post.description).to.match(/case-insensitively/);
    expect(invitations.post.description).to.match(/at most 50 pending invitations: past that, 409 invitation_quota_exceeded/);
    expect(body.paths['/developers/me/invitations'].get.parameters.map((parameter: { name: string }) => parameter.name)).to.include.members(['limit', 'cursor']);
    expect(invitations.post.responses).to.include.all.keys('201', '403', '404', '409');
    expect(member.patch.description).to.match(/last_owner/);
    expect(member.delete.responses).to.include.all.keys('204', '403', '404', '409');
    expect(body.paths['/workspaces'].post.responses).to.have.property('403');
  });
});
