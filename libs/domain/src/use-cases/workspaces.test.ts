import { expect } from 'chai';
import { ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError, ValidationError } from '../errors.js';
import type { ClientPrincipal, Developer, DeveloperPrincipal, Workspace } from '../model.js';
import type {
  DeveloperRepository,
  WorkspaceInvitation,
  WorkspaceInvitationRepository,
  WorkspaceMember,
  WorkspaceMemberEditor,
  WorkspaceRepository,
  WorkspaceRole,
} from '../ports.js';
import { isValidWorkspaceSlug } from '../workspace-slug.js';
import { firstPage, pageByKey, byCreated, type Page, type PageRequest } from '../paging.js';
import { acceptInvitation, declineInvitation, INVITATIONS_PER_WORKSPACE, inviteMember, listInvitations, listMyInvitations, revokeInvitation } from './invitations.js';
import {
  bootstrapDeveloper,
  changeMemberRole,
  createWorkspace,
  getWorkspace,
  listMembers,
  listWorkspaces,
  removeMember,
} from './workspaces.js';
import { rejection } from './assertions.test-support.js';

/**
 * Workspaces in memory, with membership; `taken` slugs and `failWith` simulate the database.
 * `editMembers` runs one edit at a time and undoes an edit that throws, like the transaction and
 * lock of the real repository.
 */
class InMemoryWorkspaces implements WorkspaceRepository {
  readonly workspaces: Workspace[] = [];
  /** Workspace id -> developer id -> role and when they joined. */
  readonly members = new Map<string, Map<string, { role: WorkspaceRole; added: Date }>>();
  readonly attempts: { name: string; slug: string; ownerId: string }[] = [];
  readonly taken = new Set<string>();
  takenPattern: RegExp | null = null;
  failWith: Error | null = null;
  /** Live clients: client id -> workspace id. */
  readonly clients = new Map<string, string>();
  private nextId = 1;

  async findForLiveClient(clientId: string): Promise<Workspace | null> {
    const workspaceId = this.clients.get(clientId);
    return this.workspaces.find((w) => w.id === workspaceId) ?? null;
  }
  private lock: Promise<unknown> = Promise.resolve();
  readonly invitations = new InMemoryInvitations(this);

  constructor(private readonly developers?: InMemoryDevelopers) {}

  async create(input: { name: string; slug: string; ownerId: string }): Promise<Workspace> {
    this.attempts.push({ ...input });
    if (this.failWith) throw this.failWith;
    if (this.taken.has(input.slug) || this.takenPattern?.test(input.slug) || this.workspaces.some((w) => w.slug === input.slug)) {
      throw new ConflictError('workspace_slug_taken', `Slug '${input.slug}' is taken`);
    }
    const workspace: Workspace = {
      id: `ws-${this.nextId++}`,
      name: input.name,
      slug: input.slug,
      billingCustomerId: null,
      created: new Date('2026-01-01T00:00:00Z'),
    };
    this.workspaces.push(workspace);
    this.members.set(workspace.id, new Map([[input.ownerId, { role: 'owner', added: new Date() }]]));
    return workspace;
  }

  async listForDeveloper(developerId: string): Promise<Workspace[]> {
    return this.workspaces.filter((w) => this.members.get(w.id)?.has(developerId));
  }

  async findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null> {
    const workspace = this.workspaces.find((w) => w.slug === slug);
    return workspace && this.members.get(workspace.id)?.has(developerId) ? workspace : null;
  }

  async findById(id: string): Promise<Workspace | null> {
    return this.workspaces.find((w) => w.id === id) ?? null;
  }

  async listMembers(workspaceId: string): Promise<WorkspaceMember[]> {
    return [...(this.members.get(workspaceId) ?? new Map()).entries()].map(([developerId, { role, added }]) => {
      const developer = this.developers?.developers.find((d) => d.id === developerId);
      return { developerId, email: developer?.email ?? `${developerId}@example.test`, name: developer?.name ?? null, role, added };
    });
  }

  async editMembers<T>(workspaceId: string, edit: (members: WorkspaceMember[], editor: WorkspaceMemberEditor) => Promise<T>): Promise<T> {
    const run = this.lock.then(async () => {
      const current = this.members.get(workspaceId);
      if (!current) throw new NotFoundError('workspace_not_found', 'Workspace not found');
      const before = new Map(current);
      const find = async (developerId: string) => (await this.listMembers(workspaceId)).find((m) => m.developerId === developerId)!;
      const editor: WorkspaceMemberEditor = {
        add: async (developerId, role) => {
          current.set(developerId, { role, added: new Date() });
          return find(developerId);
        },
        setRole: async (developerId, role) => {
          current.set(developerId, { ...current.get(developerId)!, role });
          return find(developerId);
        },
        remove: async (developerId) => {
          current.delete(developerId);
        },
        takeInvitation: async (id, email, now) => {
          const taken = this.invitations.find(id, email, now);
          if (!taken || taken.workspace.id !== workspaceId) return null;
          this.invitations.rows.splice(this.invitations.rows.indexOf(taken), 1);
          return taken;
        },
      };
      try {
        const members = await this.listMembers(workspaceId);
        // Yield, so concurrent edits would interleave here if the lock did not hold them apart.
        await new Promise((resolve) => setImmediate(resolve));
        return await edit(members, editor);
      } catch (error) {
        this.members.set(workspaceId, before);
        throw error;
      }
    });
    this.lock = run.catch(() => undefined);
    return run;
  }

  roleOf(workspaceId: string, developerId: string): WorkspaceRole | undefined {
    return this.members.get(workspaceId)?.get(developerId)?.role;
  }
}

/** Invitations beside the workspaces they invite to; the editor of `editMembers` takes them. */
class InMemoryInvitations implements WorkspaceInvitationRepository {
  readonly rows: WorkspaceInvitation[] = [];
  private nextId = 1;

  constructor(private readonly workspaces: InMemoryWorkspaces) {}

  async create(input: Parameters<WorkspaceInvitationRepository['create']>[0]): Promise<WorkspaceInvitation | null> {
    const { id, name, slug } = (await this.workspaces.findById(input.workspaceId))!;
    const others = this.rows.filter((row) => row.workspace.id === id && row.expires > input.created && !same(row.email, input.email));
    if (others.length >= input.maxPending) return null;
    const replaced = this.rows.findIndex((row) => row.workspace.id === id && same(row.email, input.email));
    if (replaced >= 0) this.rows.splice(replaced, 1);
    const invitation: WorkspaceInvitation = { id: `inv-${this.nextId++}`, workspace: { id, name, slug }, email: input.email, role: input.role, created: input.created, expires: input.expires };
    this.rows.push(invitation);
    return invitation;
  }

  async listForWorkspace(workspaceId: string, now: Date): Promise<WorkspaceInvitation[]> {
    return this.rows.filter((row) => row.workspace.id === workspaceId && row.expires > now);
  }

  async listForEmail(email: string, now: Date, page: PageRequest): Promise<Page<WorkspaceInvitation>> {
    return pageByKey(
      this.rows.filter((row) => same(row.email, email) && row.expires > now),
      page,
      byCreated,
    );
  }

  find(id: string, email: string, now: Date): WorkspaceInvitation | null {
    return this.rows.find((row) => row.id === id && same(row.email, email) && row.expires > now) ?? null;
  }

  async findForEmail(id: string, email: string, now: Date): Promise<WorkspaceInvitation | null> {
    return this.find(id, email, now);
  }

  async revoke(workspaceId: string, id: string, now: Date): Promise<boolean> {
    const index = this.rows.findIndex((row) => row.id === id && row.workspace.id === workspaceId && row.expires > now);
    if (index >= 0) this.rows.splice(index, 1);
    return index >= 0;
  }

  async decline(id: string, email: string, now: Date): Promise<boolean> {
    const found = this.find(id, email, now);
    if (found) this.rows.splice(this.rows.indexOf(found), 1);
    return found !== null;
  }
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

class InMemoryDevelopers implements Pick<DeveloperRepository, 'findByEmail' | 'findById' | 'ensure'> {
  readonly developers: Developer[] = [];

  async findById(id: string): Promise<Developer | null> {
    return this.developers.find((d) => d.id === id) ?? null;
  }

  async findByEmail(email: string): Promise<Developer | null> {
    return this.developers.find((d) => d.email.toLowerCase() === email.toLowerCase()) ?? null;
  }

  async ensure(input: { email: string; name: string | null }): Promise<Developer> {
    const existing = await this.findByEmail(input.email);
    if (existing) return existing;
    const developer: Developer = { id: `dev-${this.developers.length + 1}`, email: input.email, name: input.name, created: new Date() };
    this.developers.push(developer);
    return developer;
  }
}

const alice: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-alice', scopes: [] };
const bob: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-bob', scopes: [] };

function boundTo(developer: DeveloperPrincipal, workspace: Workspace): DeveloperPrincipal {
  return { ...developer, workspaceId: workspace.id };
}

async function expectError(promise: Promise<unknown>, type: new (...args: any[]) => Error, code: string): Promise<Error> {
  const error = await rejection(promise);
  expect(error, code).to.be.instanceOf(type);
  expect(error).to.have.property('code', code);
  return error as Error;
}

describe('workspace use cases', () => {
  let workspaces: InMemoryWorkspaces;

  beforeEach(() => {
    workspaces = new InMemoryWorkspaces();
  });

  describe('createWorkspace', () => {
    it('derives the slug from the name and makes the caller the owner', async () => {
      const workspace = await createWorkspace({ workspaces }, alice, { name: 'Acme Corp' });
      expect(workspace.slug).to.equal('acme-corp');
      expect(workspace.name).to.equal('Acme Corp');
      expect(workspaces.attempts).to.deep.equal([{ name: 'Acme Corp', slug: 'acme-corp', ownerId: 'dev-alice' }]);
      expect(await listWorkspaces({ workspaces }, alice)).to.deep.equal([workspace]);
    });

    it('trims the name', async () => {
      const workspace = await createWorkspace({ workspaces }, alice, { name: '   Acme  ' });
      expect(workspace.name).to.equal('Acme');
      expect(workspace.slug).to.equal('acme');
    });

    it('uses "workspace" for a name without a usable slug', async () => {
      const workspace = await createWorkspace({ workspaces }, alice, { name: '!!!' });
      expect(workspace.slug).to.equal('workspace');
    });

    it('retries a taken derived slug with a random 6-character suffix', async () => {
      workspaces.taken.add('acme-corp');
      const workspace = await createWorkspace({ workspaces }, alice, { name: 'Acme Corp' });
      expect(workspaces.attempts.map((a) => a.slug)[0]).to.equal('acme-corp');
      expect(workspaces.attempts).to.have.length(2);
      expect(workspace.slug).to.match(/^acme-corp-[0-9a-f]{6}$/);
      expect(isValidWorkspaceSlug(workspace.slug)).to.equal(true);
    });

    it('keeps a suffixed slug of a very long name within the slug limits', async () => {
      const name = 'Extremely Long Organisation Name That Goes On And On';
      workspaces.taken.add(await createWorkspace({ workspaces: new InMemoryWorkspaces() }, alice, { name }).then((w) => w.slug));
      const workspace = await createWorkspace({ workspaces }, alice, { name });
      expect(workspaces.attempts).to.have.length(2);
      expect(isValidWorkspaceSlug(workspace.slug), workspace.slug).to.equal(true);
    });

    it('gives up after four attempts and propagates the ConflictError', async () => {
      workspaces.takenPattern = /^acme/;
      const error = await rejection(createWorkspace({ workspaces }, alice, { name: 'Acme' }));
      expect(error).to.be.instanceOf(ConflictError);
      expect(workspaces.attempts).to.have.length(4);
      const slugs = workspaces.attempts.map((a) => a.slug);
      expect(slugs[0]).to.equal('acme');
      for (const slug of slugs.slice(1)) expect(slug).to.match(/^acme-[0-9a-f]{6}$/);
    });

    it('does not retry an error that is not a conflict', async () => {
      workspaces.failWith = new Error('connection reset');
      const error = await rejection(createWorkspace({ workspaces }, alice, { name: 'Acme' }));
      expect(error).to.equal(workspaces.failWith);
      expect(workspaces.attempts).to.have.length(1);
    });

    it('uses an explicit slug as given', async () => {
      const workspace = await createWorkspace({ workspaces }, alice, { name: 'Acme Corp', slug: 'acme-eu' });
      expect(workspace.slug).to.equal('acme-eu');
    });

    it('propagates ConflictError for a taken explicit slug without retrying', async () => {
      workspaces.taken.add('acme');
      const error = await rejection(createWorkspace({ workspaces }, alice, { name: 'Acme', slug: 'acme' }));
      expect(error).to.be.instanceOf(ConflictError);
      expect(workspaces.attempts).to.have.length(1);
    });

    it('refuses an invalid explicit slug before touching the repository', async () => {
      for (const slug of ['AB', 'Acme', 'acme-', '1acme', 'a'.repeat(49)]) {
        const error = await rejection(createWorkspace({ workspaces }, alice, { name: 'Acme', slug }));
        expect(error, slug).to.be.instanceOf(ValidationError);
        expect(error).to.have.property('code', 'invalid_workspace_slug');
      }
      expect(workspaces.attempts).to.have.length(0);
    });

    it('refuses an empty or too long name', async () => {
      for (const name of ['', '    ', 'x'.repeat(101)]) {
        const error = await rejection(createWorkspace({ workspaces }, alice, { name }));
        expect(error).to.be.instanceOf(ValidationError);
        expect(error).to.have.property('code', 'invalid_workspace_name');
      }
      expect(workspaces.attempts).to.have.length(0);
    });

    it('accepts a name of exactly 100 characters (after trimming)', async () => {
      const workspace = await createWorkspace({ workspaces }, alice, { name: `  ${'x'.repeat(100)}  ` });
      expect(workspace.name).to.have.length(100);
    });
  });

  describe('listWorkspaces', () => {
    it("lists only the caller's workspaces", async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      const b = await createWorkspace({ workspaces }, bob, { name: 'Beta' });
      expect(await listWorkspaces({ workspaces }, alice)).to.deep.equal([a]);
      expect(await listWorkspaces({ workspaces }, bob)).to.deep.equal([b]);
    });
  });

  describe('getWorkspace', () => {
    it('returns a workspace the caller belongs to', async () => {
      const created = await createWorkspace({ workspaces }, alice, { name: 'Acme' });
      expect(await getWorkspace({ workspaces }, alice, 'acme')).to.equal(created);
    });

    it('answers NotFoundError workspace_not_found for a non-member, like for a missing workspace', async () => {
      await createWorkspace({ workspaces }, alice, { name: 'Acme' });
      const forBob = await rejection(getWorkspace({ workspaces }, bob, 'acme'));
      expect(forBob).to.be.instanceOf(NotFoundError);
      expect(forBob).to.have.property('code', 'workspace_not_found');
      expect((forBob as Error).message).to.equal("Workspace 'acme' not found");

      workspaces.workspaces.length = 0;
      const missing = await rejection(getWorkspace({ workspaces }, alice, 'acme'));
      expect(missing).to.be.instanceOf(NotFoundError);
      expect((missing as NotFoundError).code).to.equal((forBob as NotFoundError).code);
      expect((missing as Error).message).to.equal((forBob as Error).message);
    });
  });

  describe('bootstrapDeveloper', () => {
    const input = { email: 'dev@example.com', name: 'Dev', workspaceName: 'Local', workspaceSlug: 'local' };

    it('creates the developer and their workspace on the first run', async () => {
      const developers = new InMemoryDevelopers();
      const { developer, workspace } = await bootstrapDeveloper({ workspaces, developers }, input);
      expect(developer.email).to.equal('dev@example.com');
      expect(workspace.slug).to.equal('local');
      expect(workspace.name).to.equal('Local');
      expect(workspaces.attempts).to.deep.equal([{ name: 'Local', slug: 'local', ownerId: developer.id }]);
    });

    it('is idempotent: a second run reuses the developer and the workspace', async () => {
      const developers = new InMemoryDevelopers();
      const first = await bootstrapDeveloper({ workspaces, developers }, input);
      const second = await bootstrapDeveloper({ workspaces, developers }, input);
      expect(second.developer).to.equal(first.developer);
      expect(second.workspace).to.equal(first.workspace);
      expect(workspaces.attempts).to.have.length(1);
      expect(developers.developers).to.have.length(1);
    });

    it("propagates a conflict when the slug belongs to someone else's workspace", async () => {
      await createWorkspace({ workspaces }, bob, { name: 'Local', slug: 'local' });
      const error = await rejection(bootstrapDeveloper({ workspaces, developers: new InMemoryDevelopers() }, input));
      expect(error).to.be.instanceOf(ConflictError);
    });
  });

  describe('a developer token bound to one workspace', () => {
    it('lists that workspace only', async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      await createWorkspace({ workspaces }, alice, { name: 'Beta' });
      expect(await listWorkspaces({ workspaces }, alice)).to.have.length(2);
      expect(await listWorkspaces({ workspaces }, boundTo(alice, a))).to.deep.equal([a]);
    });

    it('lists nothing once its developer no longer belongs to that workspace', async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      await createWorkspace({ workspaces }, alice, { name: 'Beta' });
      workspaces.members.get(a.id)!.delete(alice.developerId);
      expect(await listWorkspaces({ workspaces }, boundTo(alice, a))).to.deep.equal([]);
      await expectError(getWorkspace({ workspaces }, boundTo(alice, a), 'alpha'), NotFoundError, 'workspace_not_found');
    });

    it('gets that workspace, and answers any other like a missing one', async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      await createWorkspace({ workspaces }, alice, { name: 'Beta' });
      const bound = boundTo(alice, a);
      expect(await getWorkspace({ workspaces }, bound, 'alpha')).to.equal(a);
      const other = await expectError(getWorkspace({ workspaces }, bound, 'beta'), NotFoundError, 'workspace_not_found');
      const missing = await expectError(getWorkspace({ workspaces }, bound, 'gamma'), NotFoundError, 'workspace_not_found');
      expect(other.message.replace('beta', 'X')).to.equal(missing.message.replace('gamma', 'X'));
    });

    it('reaches nothing when bound to a workspace its developer does not belong to', async () => {
      const b = await createWorkspace({ workspaces }, bob, { name: 'Bobs' });
      await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      const bound = boundTo(alice, b);
      expect(await listWorkspaces({ workspaces }, bound)).to.deep.equal([]);
      await expectError(getWorkspace({ workspaces }, bound, 'bobs'), NotFoundError, 'workspace_not_found');
      await expectError(getWorkspace({ workspaces }, bound, 'alpha'), NotFoundError, 'workspace_not_found');
    });

    it('cannot create workspaces (ForbiddenError workspace_bound_token), before touching the repository', async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      workspaces.attempts.length = 0;
      await expectError(createWorkspace({ workspaces }, boundTo(alice, a), { name: 'More' }), ForbiddenError, 'workspace_bound_token');
      await expectError(createWorkspace({ workspaces }, boundTo(alice, a), { name: 'More', slug: 'more' }), ForbiddenError, 'workspace_bound_token');
      expect(workspaces.attempts).to.deep.equal([]);
    });

    it('reaches the members of its own workspace only', async () => {
      const a = await createWorkspace({ workspaces }, alice, { name: 'Alpha' });
      await createWorkspace({ workspaces }, alice, { name: 'Beta' });
      expect(await listMembers({ workspaces }, boundTo(alice, a), 'alpha')).to.have.length(1);
      await expectError(listMembers({ workspaces }, boundTo(alice, a), 'beta'), NotFoundError, 'workspace_not_found');
    });
  });

  describe('members', () => {
    let developers: InMemoryDevelopers;
    let workspace: Workspace;
    let deps: { workspaces: InMemoryWorkspaces; developers: InMemoryDevelopers; invitations: InMemoryInvitations; clock: { now: () => Date } };
    let now: Date;
    const carol: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-carol', scopes: [] };
    const as = (developerId: string): DeveloperPrincipal => ({ kind: 'developer', developerId, scopes: [] });

    /** An owner's invitation, accepted by its invitee: how a developer joins. */
    async function join(email: string) {
      const invitation = await inviteMember(deps, alice, 'acme', { email });
      return acceptInvitation(deps, as((await developers.findByEmail(email))!.id), invitation.id);
    }

    beforeEach(async () => {
      developers = new InMemoryDevelopers();
      for (const [id, email] of [
        ['dev-alice', 'alice@example.test'],
        ['dev-bob', 'Bob@Example.test'],
        ['dev-carol', 'carol@example.test'],
      ]) {
        developers.developers.push({ id, email, name: id.slice(4), created: new Date() });
      }
      workspaces = new InMemoryWorkspaces(developers);
      now = new Date('2026-03-01T00:00:00Z');
      deps = { workspaces, developers, invitations: workspaces.invitations, clock: { now: () => now } };
      workspace = await createWorkspace(deps, alice, { name: 'Acme', slug: 'acme' });
    });

    const roles = () => Object.fromEntries([...workspaces.members.get(workspace.id)!].map(([id, { role }]) => [id, role]));

    describe('listMembers', () => {
      it('lists the creator as the owner', async () => {
        const members = await listMembers(deps, alice, 'acme');
        expect(members).to.have.length(1);
        expect(members[0]).to.include({ developerId: 'dev-alice', email: 'alice@example.test', role: 'owner' });
      });

      it('is open to the workspace’s own clients, and 404 to anyone outside', async () => {
        const client: ClientPrincipal = { kind: 'client', clientId: 'cli', workspaceId: workspace.id, scopes: [] };
        workspaces.clients.set('cli', workspace.id);
        expect(await listMembers(deps, client, 'acme')).to.have.length(1);
        await expectError(listMembers(deps, bob, 'acme'), NotFoundError, 'workspace_not_found');
        await createWorkspace(deps, bob, { name: 'Bobs', slug: 'bobs' });
        await expectError(listMembers(deps, client, 'bobs'), NotFoundError, 'workspace_not_found');
      });

      it('answers a deleted client’s tokens 401 invalid_token at once, not 404: the token is what is gone', async () => {
        const client: ClientPrincipal = { kind: 'client', clientId: 'cli', workspaceId: workspace.id, scopes: [] };
        workspaces.clients.set('cli', workspace.id);
        workspaces.clients.delete('cli');
        await expectError(listMembers(deps, client, 'acme'), UnauthenticatedError, 'invalid_token');
        await expectError(listWorkspaces(deps, client), UnauthenticatedError, 'invalid_token');
        // A token naming another workspace than its client's is no credential either.
        workspaces.clients.set('cli', workspace.id);
        await expectError(listMembers(deps, { ...client, workspaceId: 'ws-other' }, 'acme'), UnauthenticatedError, 'invalid_token');
      });
    });

    describe('invitations', () => {
      it('invites any email with one answer shape, registered or not, and adds nobody until accepted', async () => {
        const registered = await inviteMember(deps, alice, 'acme', { email: 'BOB@example.TEST' });
        const unknown = await inviteMember(deps, alice, 'acme', { email: 'nobody@example.test' });
        expect(Object.keys(registered).sort()).to.deep.equal(Object.keys(unknown).sort());
        expect(registered).to.deep.include({ email: 'BOB@example.TEST', role: 'member', created: now, expires: new Date('2026-03-08T00:00:00Z') });
        expect(unknown).to.deep.include({ email: 'nobody@example.test', role: 'member' });
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner' });
        expect((await listInvitations(deps, alice, 'acme')).map((each) => each.email)).to.deep.equal(['BOB@example.TEST', 'nobody@example.test']);
      });

      it('shows the invitee their invitations, case-insensitively, and makes them a member when they accept', async () => {
        const invitation = await inviteMember(deps, alice, 'acme', { email: 'bob@EXAMPLE.test' });
        expect((await listMyInvitations(deps, bob, firstPage())).items.map((each) => each.id)).to.deep.equal([invitation.id]);
        expect((await listMyInvitations(deps, carol, firstPage())).items).to.deep.equal([]);
        const accepted = await acceptInvitation(deps, bob, invitation.id);
        expect(accepted.workspace).to.equal(workspace);
        expect(accepted.member).to.include({ developerId: 'dev-bob', role: 'member' });
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
        expect((await listMyInvitations(deps, bob, firstPage())).items).to.deep.equal([]);
        await expectError(acceptInvitation(deps, bob, invitation.id), NotFoundError, 'invitation_not_found');
      });

      it('answers another developer’s invitation as not found, and leaves it for its invitee', async () => {
        const invitation = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        await expectError(acceptInvitation(deps, carol, invitation.id), NotFoundError, 'invitation_not_found');
        await expectError(declineInvitation(deps, carol, invitation.id), NotFoundError, 'invitation_not_found');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner' });
        await acceptInvitation(deps, bob, invitation.id);
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('cannot be accepted once expired, revoked or declined', async () => {
        const expiring = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        now = new Date(expiring.expires.getTime());
        await expectError(acceptInvitation(deps, bob, expiring.id), NotFoundError, 'invitation_not_found');
        expect(await listInvitations(deps, alice, 'acme')).to.deep.equal([]);
        const revoked = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        await revokeInvitation(deps, alice, 'acme', revoked.id);
        await expectError(acceptInvitation(deps, bob, revoked.id), NotFoundError, 'invitation_not_found');
        await expectError(revokeInvitation(deps, alice, 'acme', revoked.id), NotFoundError, 'invitation_not_found');
        const declined = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        await declineInvitation(deps, bob, declined.id);
        await expectError(acceptInvitation(deps, bob, declined.id), NotFoundError, 'invitation_not_found');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner' });
      });

      it('replaces a pending invitation of the same email: the newer one counts', async () => {
        const first = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        const second = await inviteMember(deps, alice, 'acme', { email: 'Bob@Example.test' });
        await expectError(acceptInvitation(deps, bob, first.id), NotFoundError, 'invitation_not_found');
        expect((await acceptInvitation(deps, bob, second.id)).member.role).to.equal('member');
      });

      it('makes its invitee a member even when it was stored as an owner invitation (made before invitations granted member only)', async () => {
        const invitation = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        workspaces.invitations.rows[0] = { ...invitation, role: 'owner' };
        expect((await acceptInvitation(deps, bob, invitation.id)).member.role).to.equal('member');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it(`holds at most ${INVITATIONS_PER_WORKSPACE} pending invitations per workspace: past it ConflictError invitation_quota_exceeded and nothing changes`, async () => {
        for (let i = 0; i < INVITATIONS_PER_WORKSPACE; i++) await inviteMember(deps, alice, 'acme', { email: `person-${i}@example.test` });
        const before = await listInvitations(deps, alice, 'acme');
        await expectError(inviteMember(deps, alice, 'acme', { email: 'bob@example.test' }), ConflictError, 'invitation_quota_exceeded');
        expect(await listInvitations(deps, alice, 'acme')).to.deep.equal(before);
        // Inviting a pending email again replaces its invitation: no more pending than before.
        const again = await inviteMember(deps, alice, 'acme', { email: 'PERSON-0@example.test' });
        expect((await listInvitations(deps, alice, 'acme')).map((each) => each.id)).to.include(again.id).and.to.have.length(INVITATIONS_PER_WORKSPACE);
        // A revoked, answered or expired invitation makes room.
        await revokeInvitation(deps, alice, 'acme', again.id);
        await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        await expectError(inviteMember(deps, alice, 'acme', { email: 'carol@example.test' }), ConflictError, 'invitation_quota_exceeded');
        now = new Date(now.getTime() + 8 * 24 * 3600 * 1000);
        await inviteMember(deps, alice, 'acme', { email: 'carol@example.test' });
      });

      it('answers ConflictError already_member for a member’s email, and keeps a member’s role when they accept an older invitation', async () => {
        await expectError(inviteMember(deps, alice, 'acme', { email: 'ALICE@example.test' }), ConflictError, 'already_member');
        const invitation = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        workspaces.members.get(workspace.id)!.set('dev-bob', { role: 'owner', added: now });
        expect((await acceptInvitation(deps, bob, invitation.id)).member.role).to.equal('owner');
        expect(await listInvitations(deps, alice, 'acme')).to.deep.equal([]);
      });

      it('lets only owners invite, list and revoke (ForbiddenError owner_required), and answers an outsider like a missing workspace', async () => {
        await join('bob@example.test');
        const pending = await inviteMember(deps, alice, 'acme', { email: 'carol@example.test' });
        for (const attempt of [
          inviteMember(deps, bob, 'acme', { email: 'carol@example.test' }),
          inviteMember(deps, bob, 'acme', { email: 'nobody@example.test' }),
          listInvitations(deps, bob, 'acme'),
          revokeInvitation(deps, bob, 'acme', pending.id),
        ]) {
          await expectError(attempt, ForbiddenError, 'owner_required');
        }
        await expectError(inviteMember(deps, carol, 'acme', { email: 'nobody@example.test' }), NotFoundError, 'workspace_not_found');
        await expectError(revokeInvitation(deps, carol, 'acme', pending.id), NotFoundError, 'workspace_not_found');
        expect(await listInvitations(deps, alice, 'acme')).to.have.length(1);
      });

      it('refuses a client token (developer_token_required); a token bound to a workspace cannot answer invitations (workspace_bound_token)', async () => {
        const client: ClientPrincipal = { kind: 'client', clientId: 'cli', workspaceId: workspace.id, scopes: [] };
        workspaces.clients.set('cli', workspace.id);
        await expectError(inviteMember(deps, client, 'acme', { email: 'bob@example.test' }), ForbiddenError, 'developer_token_required');
        await expectError(changeMemberRole(deps, client, 'acme', 'dev-alice', 'member'), ForbiddenError, 'developer_token_required');
        await expectError(removeMember(deps, client, 'acme', 'dev-alice'), ForbiddenError, 'developer_token_required');
        const invitation = await inviteMember(deps, alice, 'acme', { email: 'bob@example.test' });
        const bound = boundTo(bob, workspace);
        await expectError(listMyInvitations(deps, bound, firstPage()), ForbiddenError, 'workspace_bound_token');
        await expectError(acceptInvitation(deps, bound, invitation.id), ForbiddenError, 'workspace_bound_token');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner' });
      });
    });

    describe('changeMemberRole', () => {
      beforeEach(async () => {
        await join('bob@example.test');
      });

      it('lets an owner promote a member and demote them again', async () => {
        expect((await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner')).role).to.equal('owner');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'owner' });
        expect((await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'member')).role).to.equal('member');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('refuses to demote the last owner (ConflictError last_owner)', async () => {
        await expectError(changeMemberRole(deps, alice, 'acme', 'dev-alice', 'member'), ConflictError, 'last_owner');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('lets an owner step down while another owner remains', async () => {
        await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner');
        await changeMemberRole(deps, alice, 'acme', 'dev-alice', 'member');
        expect(roles()).to.deep.equal({ 'dev-alice': 'member', 'dev-bob': 'owner' });
      });

      it('keeps the role as it is when it does not change, the last owner’s included', async () => {
        expect((await changeMemberRole(deps, alice, 'acme', 'dev-alice', 'owner')).role).to.equal('owner');
        expect((await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'member')).role).to.equal('member');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('refuses a member, their own role included (ForbiddenError owner_required)', async () => {
        await expectError(changeMemberRole(deps, bob, 'acme', 'dev-bob', 'owner'), ForbiddenError, 'owner_required');
        await expectError(changeMemberRole(deps, bob, 'acme', 'dev-alice', 'member'), ForbiddenError, 'owner_required');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('answers NotFoundError member_not_found for a developer outside the workspace', async () => {
        await expectError(changeMemberRole(deps, alice, 'acme', 'dev-carol', 'owner'), NotFoundError, 'member_not_found');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member' });
      });

      it('leaves an owner when two owners demote each other at once', async () => {
        await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner');
        const results = await Promise.allSettled([
          changeMemberRole(deps, alice, 'acme', 'dev-bob', 'member'),
          changeMemberRole(deps, bob, 'acme', 'dev-alice', 'member'),
        ]);
        const refused = results.filter((result) => result.status === 'rejected');
        expect(refused).to.have.length(1);
        const reason = (refused[0] as PromiseRejectedResult).reason;
        // The second finds its caller demoted already: only owners change roles.
        expect(reason).to.be.instanceOf(ForbiddenError);
        expect(Object.values(roles()).filter((role) => role === 'owner')).to.have.length(1);
      });

      it('leaves an owner when two owners step down at once', async () => {
        await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner');
        const results = await Promise.allSettled([
          changeMemberRole(deps, alice, 'acme', 'dev-alice', 'member'),
          changeMemberRole(deps, bob, 'acme', 'dev-bob', 'member'),
        ]);
        const refused = results.filter((result) => result.status === 'rejected');
        expect(refused).to.have.length(1);
        expect((refused[0] as PromiseRejectedResult).reason).to.have.property('code', 'last_owner');
        expect(Object.values(roles()).filter((role) => role === 'owner')).to.have.length(1);
      });
    });

    describe('removeMember', () => {
      beforeEach(async () => {
        await join('bob@example.test');
        await join('carol@example.test');
      });

      it('lets an owner remove a member, whose workspace then vanishes', async () => {
        await removeMember(deps, alice, 'acme', 'dev-bob');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-carol': 'member' });
        await expectError(getWorkspace(deps, bob, 'acme'), NotFoundError, 'workspace_not_found');
        expect(await listWorkspaces(deps, bob)).to.deep.equal([]);
      });

      it('lets a member leave', async () => {
        await removeMember(deps, bob, 'acme', 'dev-bob');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-carol': 'member' });
      });

      it('refuses a member who removes someone else (ForbiddenError owner_required)', async () => {
        await expectError(removeMember(deps, bob, 'acme', 'dev-carol'), ForbiddenError, 'owner_required');
        await expectError(removeMember(deps, bob, 'acme', 'dev-alice'), ForbiddenError, 'owner_required');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member', 'dev-carol': 'member' });
      });

      it('refuses to remove the last owner, themself included (ConflictError last_owner)', async () => {
        await expectError(removeMember(deps, alice, 'acme', 'dev-alice'), ConflictError, 'last_owner');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-bob': 'member', 'dev-carol': 'member' });
      });

      it('lets an owner leave, or be removed, while another owner remains', async () => {
        await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner');
        await removeMember(deps, bob, 'acme', 'dev-alice');
        expect(roles()).to.deep.equal({ 'dev-bob': 'owner', 'dev-carol': 'member' });
        await changeMemberRole(deps, bob, 'acme', 'dev-carol', 'owner');
        await removeMember(deps, bob, 'acme', 'dev-bob');
        expect(roles()).to.deep.equal({ 'dev-carol': 'owner' });
      });

      it('answers NotFoundError member_not_found for a developer outside the workspace', async () => {
        await removeMember(deps, alice, 'acme', 'dev-carol');
        await expectError(removeMember(deps, alice, 'acme', 'dev-carol'), NotFoundError, 'member_not_found');
      });

      it('answers a member removed while their own request waited like an outsider', async () => {
        const [byOwner, byMember] = await Promise.allSettled([
          removeMember(deps, alice, 'acme', 'dev-bob'),
          removeMember(deps, bob, 'acme', 'dev-carol'),
        ]);
        expect(byOwner.status).to.equal('fulfilled');
        expect((byMember as PromiseRejectedResult).reason).to.have.property('code', 'workspace_not_found');
        expect(roles()).to.deep.equal({ 'dev-alice': 'owner', 'dev-carol': 'member' });
      });

      it('leaves an owner when two owners remove each other at once', async () => {
        await changeMemberRole(deps, alice, 'acme', 'dev-bob', 'owner');
        const results = await Promise.allSettled([removeMember(deps, alice, 'acme', 'dev-bob'), removeMember(deps, bob, 'acme', 'dev-alice')]);
        expect(results.filter((result) => result.status === 'fulfilled')).to.have.length(1);
        expect(Object.values(roles()).filter((role) => role === 'owner')).to.have.length(1);
      });
    });
  });
});
