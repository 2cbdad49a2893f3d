import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { ConflictError, firstPage, NotFoundError, physicalDatabaseName, type Repositories, type SigningKeyRecord, type WorkspaceMember } from '@platform/domain';
import { openRepositories } from '../request-scope.js';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { MikroSigningKeyRepository } from './signing-key.repository.js';

/** A deletion now, restorable for an hour. */
function anHourToRestore(deleted = new Date()) {
  return { deleted, purgeAfter: new Date(deleted.getTime() + 3_600_000) };
}

function uniqueSlug(prefix = 'ws'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

async function expectConflict(promise: Promise<unknown>, code: string): Promise<ConflictError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected ConflictError ${code}`).to.be.instanceOf(ConflictError);
  const conflict = caught as ConflictError;
  expect(conflict.kind).to.equal('conflict');
  expect(conflict.code).to.equal(code);
  return conflict;
}

describe('repositories', function () {
  let server: TestPostgres;
  let cp: ScratchControlPlane;
  let repos: Repositories;

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createScratchControlPlane(server);
    repos = openRepositories(cp.orm);
  });

  afterEach(async function () {
    await cp?.close();
  });

  after(async function () {
    await server?.stop();
  });

  async function developer(email = `dev-${randomBytes(4).toString('hex')}@example.test`) {
    return openRepositories(cp.orm).developers.ensure({ email, name: null });
  }

  describe('DeveloperRepository', function () {
    it('ensure creates a developer and returns it', async function () {
      const created = await repos.developers.ensure({ email: 'ada@example.test', name: 'Ada' });
      expect(created.id).to.match(/^[0-9a-f-]{36}$/);
      expect(created).to.include({ email: 'ada@example.test', name: 'Ada' });
      expect(created.created).to.be.instanceOf(Date);
      expect(await repos.developers.findByEmail('ada@example.test')).to.deep.equal(created);
    });

    it('ensure is idempotent: the second call returns the existing developer unchanged', async function () {
      const first = await repos.developers.ensure({ email: 'grace@example.test', name: 'Grace' });
      const second = await openRepositories(cp.orm).developers.ensure({ email: 'grace@example.test', name: 'Someone else' });
      expect(second).to.deep.equal(first);
      expect(await query(cp.url, 'select id from developers')).to.have.length(1);
    });

    it('ensure and findByEmail ignore the case of the email', async function () {
      const first = await repos.developers.ensure({ email: 'Linus@Example.TEST', name: null });
      const second = await openRepositories(cp.orm).developers.ensure({ email: 'linus@example.test', name: null });
      expect(second.id).to.equal(first.id);
      expect(second.email).to.equal('Linus@Example.TEST');
      expect((await repos.developers.findByEmail('LINUS@EXAMPLE.TEST'))?.id).to.equal(first.id);
      expect(await query(cp.url, 'select id from developers')).to.have.length(1);
    });

    it('ensure from several requests at once yields one developer', async function () {
      const results = await Promise.all(
        ['Race@example.test', 'race@example.test', 'RACE@example.test', 'race@EXAMPLE.test'].map((email) =>
          openRepositories(cp.orm).developers.ensure({ email, name: null }),
        ),
      );
      expect(new Set(results.map((result) => result.id)).size).to.equal(1);
      expect(await query(cp.url, 'select id from developers')).to.have.length(1);
    });

    it('findByEmail returns null for an unknown email', async function () {
      await repos.developers.ensure({ email: 'known@example.test', name: null });
      expect(await repos.developers.findByEmail('unknown@example.test')).to.equal(null);
    });
  });

  describe('WorkspaceRepository', function () {
    it('create returns the workspace and makes its owner a member', async function () {
      const owner = await developer();
      const slug = uniqueSlug();
      const workspace = await repos.workspaces.create({ name: 'Acme', slug, ownerId: owner.id });
      expect(workspace).to.include({ name: 'Acme', slug, billingCustomerId: null });
      expect(workspace.created).to.be.instanceOf(Date);
      const members = await query(cp.url, 'select developer_id, role from workspace_members where workspace_id = $1', [workspace.id]);
      expect(members).to.deep.equal([{ developer_id: owner.id, role: 'owner' }]);
    });

    it('create on a taken slug is a ConflictError workspace_slug_taken and stores nothing', async function () {
      const [first, second] = [await developer(), await developer()];
      const slug = uniqueSlug();
      const original = await repos.workspaces.create({ name: 'First', slug, ownerId: first.id });

      await expectConflict(openRepositories(cp.orm).workspaces.create({ name: 'Second', slug, ownerId: second.id }), 'workspace_slug_taken');
      await expectConflict(repos.workspaces.create({ name: 'Again', slug, ownerId: first.id }), 'workspace_slug_taken');

      expect(await query(cp.url, 'select id from workspaces')).to.deep.equal([{ id: original.id }]);
      expect(await query(cp.url, 'select developer_id from workspace_members')).to.deep.equal([{ developer_id: first.id }]);
      expect(await openRepositories(cp.orm).workspaces.listForDeveloper(second.id)).to.deep.equal([]);
    });

    it('the same request can create another workspace after a slug conflict', async function () {
      // createWorkspace retries with a suffixed slug on the same repositories.
      const owner = await developer();
      const slug = uniqueSlug();
      await repos.workspaces.create({ name: 'Taken', slug, ownerId: owner.id });
      await expectConflict(repos.workspaces.create({ name: 'Retry', slug, ownerId: owner.id }), 'workspace_slug_taken');
      const retried = await repos.workspaces.create({ name: 'Retry', slug: `${slug}-x`, ownerId: owner.id });
      expect(retried.slug).to.equal(`${slug}-x`);
      const slugs = (await openRepositories(cp.orm).workspaces.listForDeveloper(owner.id)).map((workspace) => workspace.slug);
      expect(slugs).to.have.members([slug, `${slug}-x`]);
    });

    it('listForDeveloper returns only the workspaces the developer belongs to, oldest first', async function () {
      const [alice, bob, carol] = [await developer(), await developer(), await developer()];
      const a1 = await repos.workspaces.create({ name: 'A1', slug: uniqueSlug('a'), ownerId: alice.id });
      const b1 = await repos.workspaces.create({ name: 'B1', slug: uniqueSlug('b'), ownerId: bob.id });
      const a2 = await repos.workspaces.create({ name: 'A2', slug: uniqueSlug('a'), ownerId: alice.id });

      const listed = await openRepositories(cp.orm).workspaces.listForDeveloper(alice.id);
      expect(listed.map((workspace) => workspace.id)).to.have.members([a1.id, a2.id]).and.have.length(2);
      const order = [...listed].sort((x, y) => x.created.getTime() - y.created.getTime() || x.id.localeCompare(y.id));
      expect(listed.map((workspace) => workspace.id)).to.deep.equal(order.map((workspace) => workspace.id));
      expect(listed.find((workspace) => workspace.id === a1.id)).to.deep.equal(a1);

      expect((await openRepositories(cp.orm).workspaces.listForDeveloper(bob.id)).map((workspace) => workspace.id)).to.deep.equal([b1.id]);
      expect(await openRepositories(cp.orm).workspaces.listForDeveloper(carol.id)).to.deep.equal([]);
    });

    it('findBySlugForDeveloper returns the workspace to a member and null to anyone else', async function () {
      const [member, outsider] = [await developer(), await developer()];
      const slug = uniqueSlug();
      const workspace = await repos.workspaces.create({ name: 'Private', slug, ownerId: member.id });

      expect(await openRepositories(cp.orm).workspaces.findBySlugForDeveloper(slug, member.id)).to.deep.equal(workspace);
      expect(await openRepositories(cp.orm).workspaces.findBySlugForDeveloper(slug, outsider.id)).to.equal(null);
      expect(await openRepositories(cp.orm).workspaces.findBySlugForDeveloper(uniqueSlug('none'), member.id)).to.equal(null);
    });
  });

  describe('WorkspaceRepository members', function () {
    async function ownedWorkspace() {
      const owner = await developer();
      const workspace = await openRepositories(cp.orm).workspaces.create({ name: 'Team', slug: uniqueSlug(), ownerId: owner.id });
      return { owner, workspace };
    }

    const rolesIn = async (workspaceId: string) =>
      Object.fromEntries(
        (await query(cp.url, 'select developer_id, role from workspace_members where workspace_id = $1', [workspaceId])).map((row) => [row.developer_id, row.role]),
      );

    it('listMembers returns the members with their developer’s email and name, earliest first', async function () {
      const { owner, workspace } = await ownedWorkspace();
      const named = await openRepositories(cp.orm).developers.ensure({ email: `Named-${randomBytes(3).toString('hex')}@Example.test`, name: 'Named' });
      await repos.workspaces.editMembers(workspace.id, (_, editor) => editor.add(named.id, 'member'));

      const members = await openRepositories(cp.orm).workspaces.listMembers(workspace.id);
      expect(members.map((member) => ({ ...member, added: undefined }))).to.deep.equal([
        { developerId: owner.id, email: owner.email, name: null, role: 'owner', added: undefined },
        { developerId: named.id, email: named.email, name: 'Named', role: 'member', added: undefined },
      ]);
      expect(members[0].added).to.be.instanceOf(Date);
      expect(members[0].added.getTime()).to.be.at.most(members[1].added.getTime());
      expect(await repos.workspaces.listMembers(randomUUID())).to.deep.equal([]);
    });

    it('editMembers hands the members over, and add, setRole and remove persist', async function () {
      const { owner, workspace } = await ownedWorkspace();
      const other = await developer();
      const seen = await repos.workspaces.editMembers(workspace.id, async (members, editor) => {
        const added = await editor.add(other.id, 'member');
        expect(added).to.include({ developerId: other.id, email: other.email, role: 'member' });
        return members;
      });
      expect(seen.map((member) => [member.developerId, member.role])).to.deep.equal([[owner.id, 'owner']]);
      expect(await rolesIn(workspace.id)).to.deep.equal({ [owner.id]: 'owner', [other.id]: 'member' });
      expect((await openRepositories(cp.orm).workspaces.findBySlugForDeveloper(workspace.slug, other.id))?.id).to.equal(workspace.id);

      const promoted = await openRepositories(cp.orm).workspaces.editMembers(workspace.id, (_, editor) => editor.setRole(other.id, 'owner'));
      expect(promoted.role).to.equal('owner');
      expect(await rolesIn(workspace.id)).to.deep.equal({ [owner.id]: 'owner', [other.id]: 'owner' });

      await openRepositories(cp.orm).workspaces.editMembers(workspace.id, (_, editor) => editor.remove(owner.id));
      expect(await rolesIn(workspace.id)).to.deep.equal({ [other.id]: 'owner' });
      expect(await openRepositories(cp.orm).workspaces.findBySlugForDeveloper(workspace.slug, owner.id)).to.equal(null);
      expect(await openRepositories(cp.orm).workspaces.listForDeveloper(owner.id)).to.deep.equal([]);
    });

    it('editMembers keeps nothing of an edit that throws, and the repositories keep working', async function () {
      const { owner, workspace } = await ownedWorkspace();
      const other = await developer();
      let caught: unknown;
      try {
        await repos.workspaces.editMembers(workspace.id, async (_, editor) => {
          await editor.add(other.id, 'owner');
          await editor.setRole(owner.id, 'member');
          throw new ConflictError('last_owner', 'refused after the changes');
        });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(ConflictError);
      expect(await rolesIn(workspace.id)).to.deep.equal({ [owner.id]: 'owner' });
      await repos.workspaces.editMembers(workspace.id, (_, editor) => editor.add(other.id, 'member'));
      expect(await rolesIn(workspace.id)).to.deep.equal({ [owner.id]: 'owner', [other.id]: 'member' });
    });

    it('add of a developer who is a member already is a ConflictError already_member', async function () {
      const { owner, workspace } = await ownedWorkspace();
      await expectConflict(repos.workspaces.editMembers(workspace.id, (_, editor) => editor.add(owner.id, 'member')), 'already_member');
      expect(await rolesIn(workspace.id)).to.deep.equal({ [owner.id]: 'owner' });
    });

    it('editMembers on a workspace that does not exist is a NotFoundError and runs nothing', async function () {
      let ran = false;
      let caught: unknown;
      try {
        await repos.workspaces.editMembers(randomUUID(), async () => {
          ran = true;
        });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(NotFoundError);
      expect(caught).to.have.property('code', 'workspace_not_found');
      expect(ran).to.equal(false);
    });

    it('editMembers of one workspace wait for each other, and the later one sees the earlier one’s changes', async function () {
      const { owner, workspace } = await ownedWorkspace();
      const other = await developer();
      await repos.workspaces.editMembers(workspace.id, (_, editor) => editor.add(other.id, 'owner'));

      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let firstHolds!: () => void;
      const holding = new Promise<void>((resolve) => (firstHolds = resolve));
      const first = openRepositories(cp.orm).workspaces.editMembers(workspace.id, async (_, editor) => {
        await editor.setRole(other.id, 'member');
        firstHolds();
        await released;
      });
      await holding;

      let secondSaw: WorkspaceMember[] | null = null;
      const second = openRepositories(cp.orm).workspaces.editMembers(workspace.id, async (members) => {
        secondSaw = members;
      });
      // A database can still be created in the workspace while its members are locked.
      const database = await openRepositories(cp.orm).databases.create({ id: randomUUID(), workspace, name: 'during', region: 'AWS_US_WEST_2' });
      expect(database.name).to.equal('during');
      // Another workspace's members are not held up either.
      const elsewhere = await ownedWorkspace();
      await openRepositories(cp.orm).workspaces.editMembers(elsewhere.workspace.id, async () => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(secondSaw, 'the second edit ran while the first held the lock').to.equal(null);

      release();
      await Promise.all([first, second]);
      expect(secondSaw!.map((member) => [member.developerId, member.role])).to.have.deep.members([
        [owner.id, 'owner'],
        [other.id, 'member'],
      ]);
    });
  });

  describe('WorkspaceInvitationRepository', function () {
    const day = 24 * 60 * 60 * 1000;
    const now = new Date('2026-03-01T12:00:00.000Z');
    const later = (days: number) => new Date(now.getTime() + days * day);

    /** An invitation under a cap no test reaches. */
    async function invite(input: Omit<Parameters<Repositories['invitations']['create']>[0], 'maxPending'>) {
      const created = await openRepositories(cp.orm).invitations.create({ ...input, maxPending: 50 });
      if (!created) throw new Error('the workspace is at its cap');
      return created;
    }

    async function invitedWorkspace() {
      const owner = await developer();
      const workspace = await openRepositories(cp.orm).workspaces.create({ name: 'Team', slug: uniqueSlug(), ownerId: owner.id });
      return { owner, workspace };
    }

    it('create answers the invitation with its workspace; the invitee finds it case-insensitively until it expires', async function () {
      const { owner, workspace } = await invitedWorkspace();
      const invitation = await invite({ workspaceId: workspace.id, email: 'Ada@Example.TEST', role: 'owner', invitedBy: owner.id, created: now, expires: later(7) });
      expect(invitation).to.deep.equal({
        id: invitation.id,
        workspace: { id: workspace.id, name: 'Team', slug: workspace.slug },
        email: 'Ada@Example.TEST',
        role: 'owner',
        created: now,
        expires: later(7),
      });
      expect(invitation.id).to.match(/^[0-9a-f-]{36}$/);
      const fresh = openRepositories(cp.orm).invitations;
      expect((await fresh.listForEmail('ada@example.test', now, firstPage())).items).to.deep.equal([invitation]);
      expect(await fresh.findForEmail(invitation.id, 'ADA@example.test', now)).to.deep.equal(invitation);
      expect(await fresh.listForWorkspace(workspace.id, now)).to.deep.equal([invitation]);
      expect(await fresh.findForEmail(invitation.id, 'someone@example.test', now)).to.equal(null);
      expect((await fresh.listForEmail('ada@example.test', later(7), firstPage())).items).to.deep.equal([]);
      expect(await fresh.findForEmail(invitation.id, 'ada@example.test', later(7))).to.equal(null);
      expect(await fresh.listForWorkspace(workspace.id, later(7))).to.deep.equal([]);
    });

    it('create replaces the pending invitation of the same email, and drops the workspace’s expired ones', async function () {
      const { owner, workspace } = await invitedWorkspace();
      const first = await invite({ workspaceId: workspace.id, email: 'ada@example.test', role: 'member', invitedBy: owner.id, created: now, expires: later(7) });
      await invite({ workspaceId: workspace.id, email: 'old@example.test', role: 'member', invitedBy: owner.id, created: now, expires: later(1) });
      const second = await invite({ workspaceId: workspace.id, email: 'ADA@example.test', role: 'owner', invitedBy: owner.id, created: later(2), expires: later(9) });
      expect(second.id).not.to.equal(first.id);
      expect(await repos.invitations.findForEmail(first.id, 'ada@example.test', later(2))).to.equal(null);
      const rows = await query(cp.url, 'select email, role from workspace_invitations where workspace_id = $1', [workspace.id]);
      expect(rows).to.deep.equal([{ email: 'ADA@example.test', role: 'owner' }]);
    });

    it('create stops at maxPending pending invitations of other emails, concurrent ones included, and changes nothing past it', async function () {
      const { owner, workspace } = await invitedWorkspace();
      const input = (email: string, created = now) => ({ workspaceId: workspace.id, email, role: 'member' as const, invitedBy: owner.id, created, expires: later(7), maxPending: 3 });
      await invite({ ...input('expired@example.test'), expires: later(1) });
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => openRepositories(cp.orm).invitations.create(input(`person-${i}@example.test`, later(2)))),
      );
      expect(answers.filter((answer) => answer !== null)).to.have.length(3);
      const pending = async () => (await query<{ email: string }>(cp.url, 'select email from workspace_invitations where workspace_id = $1 order by email', [workspace.id])).map((row) => row.email);
      const before = await pending();
      expect(before).to.have.length(3);
      expect(await repos.invitations.create(input('one-more@example.test', later(2)))).to.equal(null);
      expect(await pending()).to.deep.equal(before);
      // A pending email invited again is replaced, not counted twice.
      expect(await repos.invitations.create(input(before[0].toUpperCase(), later(2)))).not.to.equal(null);
      expect(await pending()).to.have.length(3);
    });

    it('listForEmail pages by (created, id) in SQL, and a page goes on after an invitation that has gone since', async function () {
      const email = `invitee-${randomBytes(3).toString('hex')}@example.test`;
      const invited = [];
      for (let i = 0; i < 5; i++) {
        const { owner, workspace } = await invitedWorkspace();
        // Two at a time made at the same instant: the id orders them, and a page may end between them.
        const created = new Date(now.getTime() + Math.floor(i / 2) * 1000);
        invited.push(await invite({ workspaceId: workspace.id, email, role: 'member', invitedBy: owner.id, created, expires: later(7) }));
      }
      const order = [...invited].sort((a, b) => a.created.getTime() - b.created.getTime() || (a.id < b.id ? -1 : 1)).map((each) => each.id);
      const first = await repos.invitations.listForEmail(email, now, { limit: 2, afterId: null });
      expect(first.items.map((each) => each.id)).to.deep.equal(order.slice(0, 2));
      expect(first).to.include({ nextAfterId: order[1], nextAfterAt: first.items[1].created.getTime() });
      // The last item of the page declines before the next page is read.
      await repos.invitations.decline(order[1], email, now);
      const second = await repos.invitations.listForEmail(email, now, { limit: 2, afterId: first.nextAfterId, afterAt: first.nextAfterAt });
      expect(second.items.map((each) => each.id)).to.deep.equal(order.slice(2, 4));
      const third = await repos.invitations.listForEmail(email, now, { limit: 2, afterId: second.nextAfterId, afterAt: second.nextAfterAt });
      expect(third.items.map((each) => each.id)).to.deep.equal(order.slice(4));
      expect(third.nextAfterId).to.equal(null);
      for (const cursor of [{ afterId: order[0] }, { afterId: 'not-a-uuid', afterAt: 1 }]) {
        const error = await repos.invitations.listForEmail(email, now, { limit: 2, ...cursor }).catch((caught: Error) => caught);
        expect(error).to.include({ code: 'invalid_cursor' });
      }
    });

    it('revoke and decline delete a pending invitation once, and only their own', async function () {
      const { owner, workspace } = await invitedWorkspace();
      const other = await invitedWorkspace();
      const invitation = await invite({ workspaceId: workspace.id, email: 'ada@example.test', role: 'member', invitedBy: owner.id, created: now, expires: later(7) });
      expect(await repos.invitations.revoke(other.workspace.id, invitation.id, now)).to.equal(false);
      expect(await repos.invitations.decline(invitation.id, 'bob@example.test', now)).to.equal(false);
      expect(await repos.invitations.revoke(workspace.id, invitation.id, later(7))).to.equal(false);
      expect(await repos.invitations.revoke(workspace.id, invitation.id, now)).to.equal(true);
      expect(await repos.invitations.revoke(workspace.id, invitation.id, now)).to.equal(false);
      const again = await invite({ workspaceId: workspace.id, email: 'ada@example.test', role: 'member', invitedBy: owner.id, created: now, expires: later(7) });
      expect(await repos.invitations.decline(again.id, 'Ada@example.test', now)).to.equal(true);
      expect(await repos.invitations.decline(again.id, 'ada@example.test', now)).to.equal(false);
    });

    it('the membership editor takes an invitation in the transaction that adds its invitee', async function () {
      const { owner, workspace } = await invitedWorkspace();
      const ada = await developer(`ada-${randomBytes(3).toString('hex')}@example.test`);
      const invitation = await invite({ workspaceId: workspace.id, email: ada.email.toUpperCase(), role: 'owner', invitedBy: owner.id, created: now, expires: later(7) });
      // An edit that fails after taking it keeps the invitation.
      try {
        await repos.workspaces.editMembers(workspace.id, async (_, editor) => {
          expect(await editor.takeInvitation(invitation.id, ada.email, now)).to.deep.equal(invitation);
          throw new ConflictError('last_owner', 'refused after taking it');
        });
      } catch (error) {
        expect(error).to.be.instanceOf(ConflictError);
      }
      const other = await invitedWorkspace();
      const taken = await openRepositories(cp.orm).workspaces.editMembers(workspace.id, async (_, editor) => {
        expect(await editor.takeInvitation(invitation.id, 'someone@example.test', now)).to.equal(null);
        expect(await editor.takeInvitation(invitation.id, ada.email, later(7))).to.equal(null);
        const found = await editor.takeInvitation(invitation.id, ada.email, now);
        await editor.add(ada.id, found!.role);
        return found;
      });
      expect(taken).to.deep.equal(invitation);
      expect(await openRepositories(cp.orm).workspaces.editMembers(other.workspace.id, (_, editor) => editor.takeInvitation(invitation.id, ada.email, now))).to.equal(null);
      expect((await repos.invitations.listForEmail(ada.email, now, firstPage())).items).to.deep.equal([]);
      expect((await repos.workspaces.listMembers(workspace.id)).map((member) => [member.developerId, member.role])).to.deep.equal([
        [owner.id, 'owner'],
        [ada.id, 'owner'],
      ]);
    });
  });

  describe('DatabaseRepository', function () {
    async function workspaceOf(ownerId?: string) {
      const owner = ownerId ?? (await developer()).id;
      return openRepositories(cp.orm).workspaces.create({ name: 'W', slug: uniqueSlug(), ownerId: owner });
    }

    it('create stores a REQUESTED database with a physical name derived from its id', async function () {
      const workspace = await workspaceOf();
      const id = randomUUID();
      const database = await repos.databases.create({ id, workspace, name: 'app', region: 'AWS_EU_CENTRAL_1' });
      expect(database).to.include({ id, name: 'app', region: 'AWS_EU_CENTRAL_1', status: 'REQUESTED', deleted: null });
      expect(database.physicalName).to.equal(physicalDatabaseName(id));
      expect(database.workspace).to.deep.equal(workspace);
      const [row] = await query(cp.url, 'select status, attempts, last_error, next_attempt_at, dropped from databases where id = $1', [id]);
      expect(row).to.deep.equal({ status: 'REQUESTED', attempts: 0, last_error: null, next_attempt_at: null, dropped: null });
    });

    it('create on a name live in the workspace is a ConflictError database_name_taken', async function () {
      const workspace = await workspaceOf();
      const first = await repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });
      await expectConflict(
        openRepositories(cp.orm).databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_EU_CENTRAL_1' }),
        'database_name_taken',
      );
      expect(await query(cp.url, 'select id from databases')).to.deep.equal([{ id: first.id }]);
    });

    it('the same request keeps working after a name conflict', async function () {
      const workspace = await workspaceOf();
      await repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });
      await expectConflict(repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' }), 'database_name_taken');
      const other = await repos.databases.create({ id: randomUUID(), workspace, name: 'other', region: 'AWS_US_WEST_2' });
      expect((await repos.databases.listLivePage(workspace, firstPage())).items.map((database) => database.name)).to.have.members(['app', 'other']);
      expect(other.status).to.equal('REQUESTED');
    });

    it('the same name is fine in another workspace', async function () {
      const owner = (await developer()).id;
      const [one, two] = [await workspaceOf(owner), await workspaceOf(owner)];
      const a = await repos.databases.create({ id: randomUUID(), workspace: one, name: 'shared', region: 'AWS_US_WEST_2' });
      const b = await repos.databases.create({ id: randomUUID(), workspace: two, name: 'shared', region: 'AWS_US_WEST_2' });
      expect(a.physicalName).not.to.equal(b.physicalName);
      expect((await openRepositories(cp.orm).databases.findLiveByName(one, 'shared'))?.id).to.equal(a.id);
      expect((await openRepositories(cp.orm).databases.findLiveByName(two, 'shared'))?.id).to.equal(b.id);
      // By id, only in its own workspace.
      expect((await openRepositories(cp.orm).databases.findLiveById(one, a.id))?.name).to.equal('shared');
      expect(await openRepositories(cp.orm).databases.findLiveById(one, b.id)).to.equal(null);
    });

    it('markDeleted hides the database and frees its name', async function () {
      const workspace = await workspaceOf();
      const old = await repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });
      await repos.databases.markDeleted(old, anHourToRestore());

      const fresh = openRepositories(cp.orm);
      expect(await fresh.databases.findLiveByName(workspace, 'app')).to.equal(null);
      expect(await fresh.databases.findLiveById(workspace, old.id)).to.equal(null);
      expect((await fresh.databases.listLivePage(workspace, firstPage())).items).to.deep.equal([]);
      const again = await fresh.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });
      expect((await openRepositories(cp.orm).databases.findLiveByName(workspace, 'app'))?.id).to.equal(again.id);

      const rows = await query(cp.url, 'select id, deleted is not null as deleted from databases order by created, id');
      expect(rows).to.have.deep.members([
        { id: old.id, deleted: true },
        { id: again.id, deleted: false },
      ]);
    });

    it('markDeleted keeps the first deletion time and ignores a database of another workspace', async function () {
      const owner = (await developer()).id;
      const [home, elsewhere] = [await workspaceOf(owner), await workspaceOf(owner)];
      const database = await repos.databases.create({ id: randomUUID(), workspace: home, name: 'app', region: 'AWS_US_WEST_2' });

      expect(await repos.databases.markDeleted({ ...database, workspace: elsewhere }, anHourToRestore())).to.equal(null);
      expect(await query(cp.url, 'select deleted from databases where id = $1', [database.id])).to.deep.equal([{ deleted: null }]);

      const when = anHourToRestore();
      const marked = await repos.databases.markDeleted(database, when);
      expect(marked).to.deep.include({ id: database.id, name: 'app', deleted: when.deleted });
      expect(await query(cp.url, 'select deleted, purge_after from databases where id = $1', [database.id])).to.deep.equal([{ deleted: when.deleted, purge_after: when.purgeAfter }]);
      expect(await openRepositories(cp.orm).databases.markDeleted(database, anHourToRestore(new Date(Date.now() + 1000)))).to.equal(null);
      expect(await query(cp.url, 'select deleted from databases where id = $1', [database.id])).to.deep.equal([{ deleted: when.deleted }]);
    });

    it('listDeletedPage lists the workspace’s deleted databases within their retention, paged like the live list', async function () {
      const owner = (await developer()).id;
      const [mine, theirs] = [await workspaceOf(owner), await workspaceOf(owner)];
      const now = new Date();
      const names = ['a', 'b', 'c', 'expired', 'purged', 'live'];
      const made = [];
      for (const name of names) made.push(await repos.databases.create({ id: randomUUID(), workspace: mine, name, region: 'AWS_US_WEST_2' }));
      const other = await repos.databases.create({ id: randomUUID(), workspace: theirs, name: 'a', region: 'AWS_US_WEST_2' });
      for (const database of [...made.slice(0, 5), other]) await openRepositories(cp.orm).databases.markDeleted(database, anHourToRestore(now));
      await query(cp.url, `update databases set purge_after = $2 where id = $1`, [made[3].id, now]);
      await query(cp.url, `update databases set dropped = now() where id = $1`, [made[4].id]);

      const fresh = openRepositories(cp.orm).databases;
      const first = await fresh.listDeletedPage(mine, firstPage(2), now);
      expect(first.items.map((database) => database.name)).to.deep.equal(['a', 'b']);
      expect(first.items.every((database) => database.deleted?.getTime() === now.getTime())).to.equal(true);
      expect(first.nextAfterId).to.equal(made[1].id);
      const second = await fresh.listDeletedPage(mine, { limit: 2, afterId: first.nextAfterId }, now);
      expect(second.items.map((database) => database.name)).to.deep.equal(['c']);
      expect(second.nextAfterId).to.equal(null);
      // An hour later, every one has passed its retention.
      expect((await fresh.listDeletedPage(mine, firstPage(), new Date(now.getTime() + 3_600_000))).items).to.deep.equal([]);
    });

    it('restore brings a deleted database back, under a new name when given; a taken name is database_name_taken', async function () {
      const workspace = await workspaceOf();
      const now = new Date();
      const old = await repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });
      await repos.databases.markDeleted(old, anHourToRestore(now));
      await repos.databases.create({ id: randomUUID(), workspace, name: 'app', region: 'AWS_US_WEST_2' });

      await expectConflict(openRepositories(cp.orm).databases.restore(workspace, old.id, { now }), 'database_name_taken');
      expect((await query(cp.url, 'select deleted from databases where id = $1', [old.id]))[0].deleted).to.be.instanceOf(Date);

      const restored = await openRepositories(cp.orm).databases.restore(workspace, old.id, { name: 'app_before', now });
      expect(restored).to.deep.include({ id: old.id, name: 'app_before', deleted: null, physicalName: old.physicalName, status: 'REQUESTED' });
      expect(await query(cp.url, 'select deleted, purge_after from databases where id = $1', [old.id])).to.deep.equal([{ deleted: null, purge_after: null }]);
      expect((await openRepositories(cp.orm).databases.findLiveByName(workspace, 'app_before'))?.id).to.equal(old.id);
      // Live now: nothing to restore.
      expect(await openRepositories(cp.orm).databases.restore(workspace, old.id, { now })).to.equal(null);
    });

    it('restore and endRetention find nothing past the retention, once dropped, or in another workspace', async function () {
      const owner = (await developer()).id;
      const [home, elsewhere] = [await workspaceOf(owner), await workspaceOf(owner)];
      const now = new Date();
      const database = await repos.databases.create({ id: randomUUID(), workspace: home, name: 'app', region: 'AWS_US_WEST_2' });
      await repos.databases.markDeleted(database, anHourToRestore(now));
      const fresh = openRepositories(cp.orm).databases;
      expect(await fresh.restore(elsewhere, database.id, { now })).to.equal(null);
      expect(await fresh.endRetention(elsewhere, database.id, now)).to.equal(null);
      const later = new Date(now.getTime() + 3_600_000);
      expect(await fresh.restore(home, database.id, { now: later })).to.equal(null);
      expect(await fresh.endRetention(home, database.id, later)).to.equal(null);

      expect((await fresh.endRetention(home, database.id, now))?.id).to.equal(database.id);
      expect(await query(cp.url, 'select purge_after from databases where id = $1', [database.id])).to.deep.equal([{ purge_after: now }]);
      expect(await fresh.restore(home, database.id, { now })).to.equal(null);
      expect(await fresh.endRetention(home, database.id, now)).to.equal(null);
    });

    it('listLive returns the live databases of that workspace only', async function () {
      const owner = (await developer()).id;
      const [mine, theirs] = [await workspaceOf(owner), await workspaceOf(owner)];
      const a = await repos.databases.create({ id: randomUUID(), workspace: mine, name: 'a', region: 'AWS_US_WEST_2' });
      const b = await repos.databases.create({ id: randomUUID(), workspace: mine, name: 'b', region: 'AZURE_EASTUS' });
      const gone = await repos.databases.create({ id: randomUUID(), workspace: mine, name: 'gone', region: 'AWS_US_WEST_2' });
      await repos.databases.create({ id: randomUUID(), workspace: theirs, name: 'c', region: 'AWS_US_WEST_2' });
      await repos.databases.markDeleted(gone, anHourToRestore());

      const listed = (await openRepositories(cp.orm).databases.listLivePage(mine, firstPage())).items;
      expect(listed.map((database) => database.id)).to.have.members([a.id, b.id]).and.have.length(2);
      expect(listed.every((database) => database.workspace.id === mine.id && database.deleted === null)).to.equal(true);
    });

    it('rename changes the name, and the new name is found', async function () {
      const workspace = await workspaceOf();
      const database = await repos.databases.create({ id: randomUUID(), workspace, name: 'before', region: 'AWS_US_WEST_2' });
      const renamed = await openRepositories(cp.orm).databases.rename(database, 'after');
      expect(renamed).to.include({ id: database.id, name: 'after', physicalName: database.physicalName });

      const fresh = openRepositories(cp.orm);
      expect(await fresh.databases.findLiveByName(workspace, 'before')).to.equal(null);
      expect((await fresh.databases.findLiveByName(workspace, 'after'))?.id).to.equal(database.id);
    });

    it('rename onto a live name of the workspace is a ConflictError database_name_taken and changes nothing', async function () {
      const workspace = await workspaceOf();
      await repos.databases.create({ id: randomUUID(), workspace, name: 'one', region: 'AWS_US_WEST_2' });
      const two = await repos.databases.create({ id: randomUUID(), workspace, name: 'two', region: 'AWS_US_WEST_2' });

      await expectConflict(openRepositories(cp.orm).databases.rename(two, 'one'), 'database_name_taken');
      await expectConflict(repos.databases.rename(two, 'one'), 'database_name_taken');

      expect(await query(cp.url, 'select name from databases where id = $1', [two.id])).to.deep.equal([{ name: 'two' }]);
      // The request's repositories still work after the failed flush.
      expect((await repos.databases.rename(two, 'three')).name).to.equal('three');
    });

    it('rename onto the name of a deleted database, or of a database in another workspace, is fine', async function () {
      const owner = (await developer()).id;
      const [home, other] = [await workspaceOf(owner), await workspaceOf(owner)];
      const deleted = await repos.databases.create({ id: randomUUID(), workspace: home, name: 'old', region: 'AWS_US_WEST_2' });
      await repos.databases.markDeleted(deleted, anHourToRestore());
      await repos.databases.create({ id: randomUUID(), workspace: other, name: 'elsewhere', region: 'AWS_US_WEST_2' });
      const database = await repos.databases.create({ id: randomUUID(), workspace: home, name: 'current', region: 'AWS_US_WEST_2' });

      expect((await openRepositories(cp.orm).databases.rename(database, 'old')).name).to.equal('old');
      expect((await openRepositories(cp.orm).databases.rename(database, 'elsewhere')).name).to.equal('elsewhere');
    });
  });

  describe('SigningKeyRepository', function () {
    const T = Date.parse('2030-01-01T00:00:00.000Z');
    const at = (minutes: number) => new Date(T + minutes * 60_000);

    function key(kid: string, dates: { created: Date; retires?: Date | null; expires?: Date | null }) {
      return {
        kid,
        alg: 'ES256',
        publicJwk: { kty: 'EC', crv: 'P-256', x: `x-${kid}`, y: `y-${kid}`, kid },
        // Opaque to the repository: the KeySet seals, this only stores.
        sealedPrivateKey: `v1.ring1.iv-${kid}.secret-${kid}`,
        created: dates.created,
        retires: dates.retires ?? null,
        expires: dates.expires ?? null,
      };
    }

    function keys() {
      return new MikroSigningKeyRepository(cp.orm.em.fork());
    }

    function publicPart(record: ReturnType<typeof key>): SigningKeyRecord {
      return { kid: record.kid, alg: record.alg, publicJwk: record.publicJwk, created: record.created, retires: record.retires, expires: record.expires };
    }

    it('insert stores the record as given, the private half sealed and no plain one', async function () {
      const record = key('k1', { created: at(-10), retires: at(10), expires: at(20) });
      await keys().insert(record);
      expect(await keys().listVerifying(at(0))).to.deep.equal([publicPart(record)]);
      const [row] = await query(cp.url, 'select private_jwk, sealed_private_jwk from signing_keys where kid = $1', ['k1']);
      expect(row).to.deep.equal({ private_jwk: null, sealed_private_jwk: record.sealedPrivateKey });
    });

    /** A key as a release from before sealing wrote it: the private JWK in plain text. */
    async function insertPlain(kid: string, created: Date) {
      const plain = { kty: 'EC', crv: 'P-256', x: `x-${kid}`, y: `y-${kid}`, d: `plain-${kid}`, kid };
      await query(cp.url, `insert into signing_keys (kid, alg, public_jwk, private_jwk, created) values ($1, 'ES256', $2, $3, $4)`, [
        kid,
        JSON.stringify({ kty: 'EC', kid }),
        JSON.stringify(plain),
        created,
      ]);
      return plain;
    }

    it('a plain private half from before sealing is read as such, and replaced by a sealed one once', async function () {
      const plain = await insertPlain('old', at(-10));
      await keys().insert(key('new', { created: at(-5), retires: at(-1) }));

      expect((await keys().findSigning(at(0), at(0)))?.privateKey).to.deep.equal({ plain });
      expect(await keys().listPrivateKeys()).to.deep.equal([
        { kid: 'old', privateKey: { plain } },
        { kid: 'new', privateKey: { sealed: 'v1.ring1.iv-new.secret-new' } },
      ]);

      expect(await keys().replacePrivateKey('old', { plain }, 'v1.ring1.iv-old.sealed-old')).to.equal(true);
      // A second replica that read the plain half too finds it gone and changes nothing.
      expect(await keys().replacePrivateKey('old', { plain }, 'v1.ring1.iv-old.other')).to.equal(false);
      expect(await query(cp.url, 'select private_jwk, sealed_private_jwk from signing_keys where kid = $1', ['old'])).to.deep.equal([
        { private_jwk: null, sealed_private_jwk: 'v1.ring1.iv-old.sealed-old' },
      ]);

      // Re-sealing (a new ring key) is conditional on the sealed text read.
      expect(await keys().replacePrivateKey('new', { sealed: 'v1.ring0.stale' }, 'v1.ring2.x.y')).to.equal(false);
      expect(await keys().replacePrivateKey('new', { sealed: 'v1.ring1.iv-new.secret-new' }, 'v1.ring2.x.y')).to.equal(true);
      expect((await keys().listPrivateKeys()).map((entry) => entry.privateKey)).to.deep.equal([{ sealed: 'v1.ring1.iv-old.sealed-old' }, { sealed: 'v1.ring2.x.y' }]);
    });

    it('exclusively runs one holder of the key set\'s lock at a time, each in a transaction that commits or rolls back whole', async function () {
      const events: string[] = [];
      let releaseFirst = () => {};
      const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
      const first = keys().exclusively(async (locked) => {
        events.push('first in');
        await locked.insert(key('first', { created: at(0) }));
        await firstHolds;
        events.push('first out');
      });
      // The second waits for the lock, then sees what the first committed.
      while (!events.includes('first in')) await new Promise((resolve) => setTimeout(resolve, 5));
      const second = keys().exclusively(async (locked) => {
        events.push('second in');
        return (await locked.listPrivateKeys()).map((entry) => entry.kid);
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Outside the lock, the first's insert is not visible until it commits.
      expect(await keys().listPrivateKeys()).to.deep.equal([]);
      releaseFirst();
      await first;
      expect(await second).to.deep.equal(['first']);
      expect(events).to.deep.equal(['first in', 'first out', 'second in']);

      const failure = await keys()
        .exclusively(async (locked) => {
          await locked.insert(key('rolled-back', { created: at(1) }));
          await locked.retireAllExcept('rolled-back', at(2), at(3));
          throw new Error('halfway');
        })
        .catch((error: Error) => error.message);
      expect(failure).to.equal('halfway');
      expect(await keys().listVerifying(at(0))).to.deep.equal([publicPart(key('first', { created: at(0) }))]);
    });

    it('a row holds exactly one private half', async function () {
      await keys().insert(key('k', { created: at(0) }));
      let refused = 0;
      for (const sql of [`update signing_keys set private_jwk = '{}'::jsonb`, `update signing_keys set sealed_private_jwk = null`]) {
        await query(cp.url, sql).catch(() => refused++);
      }
      expect(refused).to.equal(2);
    });

    it('insert refuses a second key with the same kid', async function () {
      await keys().insert(key('dup', { created: at(0) }));
      let failed = false;
      await keys()
        .insert(key('dup', { created: at(1) }))
        .catch(() => (failed = true));
      expect(failed).to.equal(true);
      expect(await keys().listVerifying(at(0))).to.have.length(1);
    });

    it('listVerifying returns the keys not yet expired, newest first, never with their private half', async function () {
      await keys().insert(key('expired', { created: at(-30), retires: at(-20), expires: at(-1) }));
      await keys().insert(key('expires-now', { created: at(-25), retires: at(-20), expires: at(0) }));
      await keys().insert(key('retired', { created: at(-20), retires: at(-5), expires: at(60) }));
      await keys().insert(key('current', { created: at(-10) }));
      await keys().insert(key('future', { created: at(5) }));

      const verifying = await keys().listVerifying(at(0));
      expect(verifying.map((record) => record.kid)).to.deep.equal(['future', 'current', 'retired']);
      for (const record of verifying) {
        expect(record).not.to.have.property('privateKey');
        expect(JSON.stringify(record)).not.to.include('secret-');
      }
      expect((await keys().listVerifying(at(-2))).map((record) => record.kid)).to.deep.equal(['future', 'current', 'retired', 'expires-now', 'expired']);
    });

    it('findSigning returns the newest key that still signs, with its private half', async function () {
      const old = key('old', { created: at(-30) });
      const current = key('current', { created: at(-10), retires: at(10), expires: at(20) });
      await keys().insert(old);
      await keys().insert(current);

      const signing = await keys().findSigning(at(0), at(0));
      const { sealedPrivateKey, ...rest } = current;
      expect(signing).to.deep.equal({ ...rest, privateKey: { sealed: sealedPrivateKey } });
    });

    it('findSigning skips retired keys, a key that retires exactly at `now` included', async function () {
      const fallback = key('fallback', { created: at(-60) });
      await keys().insert(fallback);
      await keys().insert(key('retired', { created: at(-30), retires: at(-1), expires: at(60) }));
      await keys().insert(key('retires-now', { created: at(-20), retires: at(0), expires: at(60) }));

      expect((await keys().findSigning(at(0), at(0)))?.kid).to.equal('fallback');
      expect((await keys().findSigning(at(-1), at(0)))?.kid).to.equal('retires-now');
      expect((await keys().findSigning(at(-2), at(0)))?.kid).to.equal('retires-now');
    });

    it('findSigning ignores keys created after `createdBy`, a key created exactly then included', async function () {
      await keys().insert(key('published', { created: at(-10) }));
      await keys().insert(key('edge', { created: at(-5) }));
      await keys().insert(key('unpublished', { created: at(-1) }));

      expect((await keys().findSigning(at(0), at(0)))?.kid).to.equal('unpublished');
      expect((await keys().findSigning(at(0), at(-5)))?.kid).to.equal('edge');
      expect((await keys().findSigning(at(0), at(-6)))?.kid).to.equal('published');
      expect(await keys().findSigning(at(0), at(-11))).to.equal(null);
    });

    it('findSigning returns null when no key signs', async function () {
      expect(await keys().findSigning(at(0), at(0))).to.equal(null);
      await keys().insert(key('retired', { created: at(-10), retires: at(-1) }));
      expect(await keys().findSigning(at(0), at(0))).to.equal(null);
    });

    it('the private half is returned by findSigning only', async function () {
      const record = key('only', { created: at(-1) });
      await keys().insert(record);
      const repository = keys();
      const verifying = await repository.listVerifying(at(0));
      const signing = await repository.findSigning(at(0), at(0));
      const verifyingAgain = await repository.listVerifying(at(0));

      expect(signing?.privateKey).to.deep.equal({ sealed: record.sealedPrivateKey });
      expect(verifying).to.deep.equal([publicPart(record)]);
      expect(verifyingAgain).to.deep.equal([publicPart(record)]);
      expect(verifyingAgain[0]).not.to.have.property('privateKey');
      expect(JSON.stringify(verifyingAgain)).not.to.include('secret-');
    });
  });
});
