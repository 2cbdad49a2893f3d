/*
 * In-memory fakes of the ports the tenant, user, developer and client use cases take, and a small
 * platform built from them, for those use cases' unit tests. Not a test file itself (mocha does
 * not load it) and not part of the library's build.
 */
import type { DataPlane, DataPlaneRepositories, DatabaseLocator, NewUser, UserPatch, UserTokenIssuer } from '../data-plane.js';
import type { AdmittedHash, HashClaim, PasswordHashing } from '../password-hashing.js';
import { FakeThrottle } from './throttle-fake.test-support.js';
import { NOW, unused } from './fake-basics.test-support.js';
import { FakeClients, FakeClientSecrets } from './client-fakes.test-support.js';
import { ConflictError, NotFoundError, RateLimitedError } from '../errors.js';
import { byCreated, pageAfterId, pageByKey, type Page, type PageRequest } from '../paging.js';
import type { ClientPrincipal, Database, Developer, DeveloperPrincipal, Tenant, User, UserPrincipal, Workspace } from '../model.js';
import type { DatabaseRepository, DeveloperRepository, WorkspaceMember, WorkspaceRepository } from '../ports.js';

export { NOW } from './fake-basics.test-support.js';
export { FakeClients, FakeClientSecrets } from './client-fakes.test-support.js';

/** Workspaces with fixed members, and the workspaces of live clients. */
export class FakeWorkspaces implements WorkspaceRepository {
  private readonly rows: { workspace: Workspace; members: Set<string>; owners: Set<string> }[] = [];
  /** Live client id -> its workspace id. */
  readonly clients = new Map<string, string>();

  /** A workspace whose members are all owners unless `ownerIds` names fewer. */
  add(slug: string, memberIds: string[], ownerIds: string[] = memberIds): Workspace {
    const workspace: Workspace = { id: `ws-${slug}`, name: slug, slug, billingCustomerId: null, created: NOW };
    this.rows.push({ workspace, members: new Set(memberIds), owners: new Set(ownerIds) });
    return workspace;
  }

  async listMembers(workspaceId: string): Promise<WorkspaceMember[]> {
    const row = this.rows.find((candidate) => candidate.workspace.id === workspaceId);
    return [...(row?.members ?? [])].map((developerId) => ({
      developerId,
      email: `${developerId}@example.test`,
      name: null,
      role: row!.owners.has(developerId) ? 'owner' : 'member',
      added: NOW,
    }));
  }

  async listForDeveloper(developerId: string): Promise<Workspace[]> {
    return this.rows.filter((row) => row.members.has(developerId)).map((row) => row.workspace);
  }

  async findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null> {
    return this.rows.find((row) => row.workspace.slug === slug && row.members.has(developerId))?.workspace ?? null;
  }

  async findById(id: string): Promise<Workspace | null> {
    return this.rows.find((row) => row.workspace.id === id)?.workspace ?? null;
  }

  async findForLiveClient(clientId: string): Promise<Workspace | null> {
    return this.findById(this.clients.get(clientId) ?? '');
  }

  create = unused;
  editMembers = unused;
}

/** The control plane's databases, also serving as the locator that finds them without a caller. */
export class FakeDatabases implements DatabaseRepository, DatabaseLocator {
  readonly rows: Database[] = [];

  add(workspace: Workspace, name: string, status: Database['status'] = 'READY'): Database {
    const id = `db-${workspace.slug}-${name}`;
    const database: Database = { id, workspace, name, region: 'AWS_EU_CENTRAL_1', status, physicalName: id, created: NOW, updated: NOW, deleted: null };
    this.rows.push(database);
    return database;
  }

  async listLivePage(workspace: Workspace, page: PageRequest): Promise<Page<Database>> {
    return pageAfterId(this.rows.filter((row) => !row.deleted && row.workspace.id === workspace.id), page);
  }

  async findLiveByName(workspace: Workspace, name: string): Promise<Database | null> {
    return this.rows.find((row) => !row.deleted && row.workspace.id === workspace.id && row.name === name) ?? null;
  }

  async findLiveById(workspace: Workspace, id: string): Promise<Database | null> {
    return this.rows.find((row) => !row.deleted && row.workspace.id === workspace.id && row.id === id) ?? null;
  }

  async findBySlugAndName(workspaceSlug: string, name: string): Promise<Database | null> {
    return this.rows.find((row) => !row.deleted && row.workspace.slug === workspaceSlug && row.name === name) ?? null;
  }

  async findById(id: string): Promise<Database | null> {
    return this.rows.find((row) => !row.deleted && row.id === id) ?? null;
  }

  create = unused;
  rename = unused;
  markDeleted = unused;
  listDeletedPage = unused;
  restore = unused;
  endRetention = unused;
}

/** The built-in tables of one platform database: tenants, users, memberships, sessions. */
export class FakeDataPlaneDatabase {
  readonly tenants: (Tenant & { deleted: boolean })[] = [];
  readonly users: { user: User; passwordHash: string }[] = [];
  /** `${tenantId} ${userId}` */
  readonly memberships = new Set<string>();
  /** `${issuer} ${subject}` to user id */
  readonly identities = new Map<string, string>();
  readonly sessions: { id: string; userId: string; token: string; revoked: boolean }[] = [];
  /** Set to make the next reads fail as a database dropped a moment ago does. */
  dropped = false;
  private serial = 0;

  constructor(private readonly database: Database) {}

  private next(prefix: string): string {
    return `${prefix}-${++this.serial}`;
  }

  isMember(userId: string, tenantId: string): boolean {
    return this.memberships.has(`${tenantId} ${userId}`) && this.tenants.some((tenant) => tenant.id === tenantId && !tenant.deleted);
  }

  isLive(sessionId: string, userId: string): boolean {
    return this.sessions.some((session) => session.id === sessionId && session.userId === userId && !session.revoked);
  }

  private liveTenants(): Tenant[] {
    return this.tenants.filter((row) => !row.deleted).map((row) => ({ id: row.id, name: row.name, created: row.created, updated: row.updated }));
  }

  private findUser(id: string): User | null {
    return this.users.find((row) => row.user.id === id)?.user ?? null;
  }

  private assertNotDropped(): void {
    if (this.dropped) throw new NotFoundError('database_not_found', `Database '${this.database.name}' not found`);
  }

  readonly repositories: DataPlaneRepositories = {
    tenants: {
      create: async (input) => {
        const id = input.id ?? this.next('tenant');
        if (this.tenants.some((tenant) => tenant.id === id)) throw new ConflictError('tenant_id_taken', `A tenant with id '${id}' already exists`);
        const tenant = { id, name: input.name, created: NOW, updated: NOW, deleted: false };
        this.tenants.push(tenant);
        return this.liveTenants().find((live) => live.id === id)!;
      },
      list: async () => this.liveTenants(),
      listPage: async (page) => pageByKey(this.liveTenants(), page, byCreated),
      listForUser: async (userId, sessionId) => ({
        sessionValid: this.isLive(sessionId, userId),
        tenants: this.liveTenants().filter((tenant) => this.isMember(userId, tenant.id)),
      }),
      find: async (id) => this.liveTenants().find((tenant) => tenant.id === id) ?? null,
      rename: async (id, name) => {
        const tenant = this.tenants.find((row) => row.id === id && !row.deleted);
        if (tenant) tenant.name = name;
        return this.liveTenants().find((live) => live.id === id) ?? null;
      },
      delete: async (id) => {
        const tenant = this.tenants.find((row) => row.id === id && !row.deleted);
        if (tenant) tenant.deleted = true;
        return tenant !== undefined;
      },
    },
    users: {
      create: async (input: NewUser, tenantId?: string) => {
        if (this.users.some((row) => row.user.email.toLowerCase() === input.email.toLowerCase())) {
          throw new ConflictError('email_taken', 'A user with this email already exists in this database');
        }
        const { passwordHash, ...fields } = input;
        const user: User = { name: null, givenName: null, familyName: null, picture: null, ...fields, id: this.next('user'), emailVerified: null, created: NOW, updated: NOW };
        this.users.push({ user, passwordHash });
        if (tenantId !== undefined) this.memberships.add(`${tenantId} ${user.id}`);
        return user;
      },
      find: async (id) => this.findUser(id),
      findByEmail: async (email) => this.users.find((row) => row.user.email.toLowerCase() === email.toLowerCase())?.user ?? null,
      findByIdentity: async (identity) => this.findUser(this.identities.get(`${identity.issuer} ${identity.subject}`) ?? ''),
      createWithIdentity: async (input, identity, tenantId) => {
        const user = await this.repositories.users.create({ ...input, passwordHash: '' }, tenantId);
        this.identities.set(`${identity.issuer} ${identity.subject}`, user.id);
        return user;
      },
      linkIdentity: async (userId, identity) => {
        const key = `${identity.issuer} ${identity.subject}`;
        if ((this.identities.get(key) ?? userId) !== userId) throw new ConflictError('identity_taken', 'This account at the provider is linked to another user');
        this.identities.set(key, userId);
      },
      findCredentials: async (email) => {
        this.assertNotDropped();
        return this.users.find((row) => row.user.email.toLowerCase() === email.toLowerCase()) ?? null;
      },
      update: async (id: string, patch: UserPatch) => {
        const row = this.users.find((candidate) => candidate.user.id === id);
        if (row) row.user = { ...row.user, ...patch };
        return row?.user ?? null;
      },
      listMembersPage: async (tenantId, page) => pageByKey(await this.repositories.users.listMembers(tenantId), page, byCreated),
      listMembers: async (tenantId) => this.users.map((row) => row.user).filter((user) => this.isMember(user.id, tenantId)),
      tenantIds: async (userId) => this.liveTenants().filter((tenant) => this.isMember(userId, tenant.id)).map((tenant) => tenant.id),
      link: async (tenantId, userId) => {
        const added = !this.memberships.has(`${tenantId} ${userId}`);
        this.memberships.add(`${tenantId} ${userId}`);
        return added;
      },
      unlink: async (tenantId, userId) => this.memberships.delete(`${tenantId} ${userId}`),
      delete: async (id) => {
        const index = this.users.findIndex((row) => row.user.id === id);
        if (index < 0) return false;
        this.users.splice(index, 1);
        for (const key of [...this.memberships]) if (key.endsWith(` ${id}`)) this.memberships.delete(key);
        for (const session of this.sessions) if (session.userId === id) session.revoked = true;
        return true;
      },
      shareTenant: async (userId, otherUserId) => this.liveTenants().some((tenant) => this.isMember(userId, tenant.id) && this.isMember(otherUserId, tenant.id)),
      access: async (userId, sessionId, tenantId) => ({ sessionValid: this.isLive(sessionId, userId), member: this.isMember(userId, tenantId) }),
    },
    sessions: {
      create: async (userId, ttlSeconds) => {
        const session = { id: this.next('session'), userId, token: this.next('cookie'), revoked: false };
        this.sessions.push(session);
        return { id: session.id, token: session.token, expires: new Date(NOW.getTime() + ttlSeconds * 1000) };
      },
      findByToken: async (token) => {
        const session = this.sessions.find((row) => row.token === token && !row.revoked);
        return session ? { id: session.id, userId: session.userId, expires: new Date(NOW.getTime() + 3600_000) } : null;
      },
      isLive: async (id, userId) => this.isLive(id, userId),
      revoke: async (id) => {
        for (const session of this.sessions) if (session.id === id) session.revoked = true;
      },
    },
  };
}

export class FakeDataPlane implements DataPlane {
  private readonly byDatabase = new Map<string, FakeDataPlaneDatabase>();

  of(database: Database): FakeDataPlaneDatabase {
    let store = this.byDatabase.get(database.id);
    if (!store) this.byDatabase.set(database.id, (store = new FakeDataPlaneDatabase(database)));
    return store;
  }

  open(database: Database): DataPlaneRepositories {
    return this.of(database).repositories;
  }
}

/**
 * Hashes are readable (`hash:<password>`); every verification is logged, stand-ins included, and
 * every claim on the hashing queue. `refuseWith` makes admissions answer 429 with that wait;
 * `held` counts places taken and not yet given back.
 */
export class FakeHasher implements PasswordHashing {
  readonly verifications: string[] = [];
  readonly claims: HashClaim[] = [];
  refuseWith: number | null = null;
  held = 0;

  async admit(claim: HashClaim): Promise<AdmittedHash> {
    if (this.refuseWith !== null) throw new RateLimitedError(this.refuseWith, 'Too many sign-ins under way; try again shortly');
    this.claims.push(claim);
    this.held += 1;
    let open = true;
    const giveBack = <T>(value: T): T => {
      if (open) this.held -= 1;
      open = false;
      return value;
    };
    return {
      hash: async (password) => giveBack(`hash:${password}`),
      verify: async (password, hash) => {
        this.verifications.push(`verify:${password}`);
        return giveBack(hash === `hash:${password}`);
      },
      verifyNothing: async (password) => {
        this.verifications.push(`verifyNothing:${password}`);
        return giveBack(false);
      },
      release: () => giveBack(undefined),
    };
  }
}

export const fakeTokens: UserTokenIssuer = {
  issue: async ({ userId, databaseId, sessionId }) => ({ jwt: `jwt:${userId}:${databaseId}:${sessionId}`, maxAge: 3600 }),
};

/** Developer accounts; the hash is null for an account without a password. */
export class FakeDevelopers implements DeveloperRepository {
  readonly rows: { developer: Developer; passwordHash: string | null }[] = [];

  async findByEmail(email: string): Promise<Developer | null> {
    return this.rows.find((row) => row.developer.email.toLowerCase() === email.toLowerCase())?.developer ?? null;
  }

  async findById(id: string): Promise<Developer | null> {
    return this.rows.find((row) => row.developer.id === id)?.developer ?? null;
  }

  async createWithPassword(input: { email: string; name: string | null; passwordHash: string | null }): Promise<Developer> {
    if (await this.findByEmail(input.email)) throw new ConflictError('developer_exists', 'An account with this email already exists; sign in instead');
    const developer: Developer = { id: `dev-${this.rows.length + 1}`, email: input.email, name: input.name, created: NOW };
    this.rows.push({ developer, passwordHash: input.passwordHash });
    return developer;
  }

  async findCredentials(email: string): Promise<{ developer: Developer; passwordHash: string | null } | null> {
    return this.rows.find((row) => row.developer.email.toLowerCase() === email.toLowerCase()) ?? null;
  }

  ensure = unused;
  setPasswordHash = unused;
}

/**
 * Workspace `acme` (developer alice, client `acme-client`) with a READY database `main` and a
 * `building` one; workspace `globex` of developer mallory, a stranger to acme, with its own `main`.
 */
export function fakePlatform() {
  const workspaces = new FakeWorkspaces();
  // Bob is a plain member of acme: he may see its clients but not register or change them.
  const acme = workspaces.add('acme', ['dev-alice', 'dev-bob'], ['dev-alice']);
  const globex = workspaces.add('globex', ['dev-mallory']);
  workspaces.clients.set('acme-client', acme.id);
  const databases = new FakeDatabases();
  const main = databases.add(acme, 'main');
  const building = databases.add(acme, 'building', 'REQUESTED');
  const globexMain = databases.add(globex, 'main');
  const dataPlane = new FakeDataPlane();
  const deps = {
    workspaces,
    databases,
    locator: databases,
    dataPlane,
    hasher: new FakeHasher(),
    throttle: new FakeThrottle(),
    tokens: fakeTokens,
    sessionTtlSeconds: 86_400,
    /** Off, as the platform's default: only developers create users. */
    membersCreateUsers: false as boolean,
    developers: new FakeDevelopers(),
    clients: new FakeClients(),
    secrets: new FakeClientSecrets(),
  };
  const alice: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-alice', scopes: [] };
  const mallory: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-mallory', scopes: [] };
  const bob: DeveloperPrincipal = { kind: 'developer', developerId: 'dev-bob', scopes: [] };
  const acmeClient: ClientPrincipal = { kind: 'client', clientId: 'acme-client', workspaceId: acme.id, scopes: [] };
  const data = dataPlane.of(main);

  /** A tenant of `main`, created directly in its tables. */
  async function tenant(name = 'Tenant'): Promise<Tenant> {
    return data.repositories.tenants.create({ name });
  }

  /** A user of `main` with a password, a member of the given tenants, signed in through a session (and its cookie). */
  async function user(email: string, password: string, tenants: Tenant[] = []): Promise<{ user: User; caller: UserPrincipal; cookie: string }> {
    const created = await data.repositories.users.create({ email, passwordHash: `hash:${password}` });
    for (const { id } of tenants) await data.repositories.users.link(id, created.id);
    const session = await data.repositories.sessions.create(created.id, 60);
    return { user: created, caller: { kind: 'user', userId: created.id, databaseId: main.id, sessionId: session.id }, cookie: session.token };
  }

  return { deps, acme, globex, main, building, globexMain, data, alice, bob, mallory, acmeClient, tenant, user };
}
