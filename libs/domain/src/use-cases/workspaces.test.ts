import { expect } from 'chai';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import type { Developer, DeveloperPrincipal, Workspace } from '../model.js';
import type { DeveloperRepository, WorkspaceRepository } from '../ports.js';
import { isValidWorkspaceSlug } from '../workspace-slug.js';
import { bootstrapDeveloper, createWorkspace, getWorkspace, listWorkspaces } from './workspaces.js';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

/** Workspaces in memory, with membership; `taken` slugs and `failWith` simulate the database. */
class InMemoryWorkspaces implements WorkspaceRepository {
  readonly workspaces: Workspace[] = [];
  readonly members = new Map<string, Set<string>>();
  readonly attempts: { name: string; slug: string; ownerId: string }[] = [];
  readonly taken = new Set<string>();
  takenPattern: RegExp | null = null;
  failWith: Error | null = null;
  private nextId = 1;

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
    this.members.set(workspace.id, new Set([input.ownerId]));
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
}

class InMemoryDevelopers implements DeveloperRepository {
  readonly developers: Developer[] = [];

  async findByEmail(email: string): Promise<Developer | null> {
    return this.developers.find((d) => d.email === email) ?? null;
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
});
