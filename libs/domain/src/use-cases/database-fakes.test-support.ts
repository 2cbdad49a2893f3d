import { ConflictError } from '../errors.js';
import { physicalDatabaseName, type Database, type Workspace } from '../model.js';
import { pageAfterId, type Page, type PageRequest } from '../paging.js';
import type { ClusterDirectory, ClusterDriver, DatabaseCopier, DatabaseRepository, Provisioner, WorkspaceRepository } from '../ports.js';
import type { Region } from '../regions.js';

// The fakes of the database use cases' tests (databases.test.ts): workspaces, databases kept in
// memory, clusters, a provisioner that records what it is asked, and backups a test sets the reach of.

/** Workspaces with fixed membership: each workspace lists the developers that belong to it. */
export class FixedWorkspaces implements WorkspaceRepository {
  constructor(private readonly entries: { workspace: Workspace; members: string[] }[]) {}

  async create(): Promise<Workspace> {
    throw new Error('not used');
  }

  async listForDeveloper(developerId: string): Promise<Workspace[]> {
    return this.entries.filter((e) => e.members.includes(developerId)).map((e) => e.workspace);
  }

  async findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null> {
    return this.entries.find((e) => e.workspace.slug === slug && e.members.includes(developerId))?.workspace ?? null;
  }

  async findById(id: string): Promise<Workspace | null> {
    return this.entries.find((e) => e.workspace.id === id)?.workspace ?? null;
  }

  async findForLiveClient(): Promise<never> {
    throw new Error('not used');
  }

  async listMembers(): Promise<never> {
    throw new Error('not used');
  }

  async editMembers(): Promise<never> {
    throw new Error('not used');
  }
}

export class InMemoryDatabases implements DatabaseRepository {
  readonly rows: Database[] = [];

  constructor(private readonly log: string[]) {}

  async create(input: { id: string; workspace: Workspace; name: string; region: Region }): Promise<Database> {
    this.log.push(`create:${input.name}`);
    if (this.rows.some((d) => !d.deleted && d.workspace.id === input.workspace.id && d.name === input.name)) {
      throw new ConflictError('database_name_taken', `Database '${input.name}' exists`);
    }
    const now = new Date('2026-01-01T00:00:00Z');
    const database: Database = {
      ...input,
      status: 'REQUESTED',
      physicalName: physicalDatabaseName(input.id),
      created: now,
      updated: now,
      deleted: null,
    };
    this.rows.push(database);
    return database;
  }

  async listLivePage(workspace: Workspace, page: PageRequest): Promise<Page<Database>> {
    return pageAfterId(this.rows.filter((d) => !d.deleted && d.workspace.id === workspace.id), page);
  }

  async findLiveByName(workspace: Workspace, name: string): Promise<Database | null> {
    return this.rows.find((d) => !d.deleted && d.workspace.id === workspace.id && d.name === name) ?? null;
  }

  async findLiveById(workspace: Workspace, id: string): Promise<Database | null> {
    return this.rows.find((d) => !d.deleted && d.workspace.id === workspace.id && d.id === id) ?? null;
  }

  async rename(database: Database, name: string): Promise<Database> {
    this.log.push(`rename:${database.id}:${name}`);
    if (this.rows.some((d) => !d.deleted && d.workspace.id === database.workspace.id && d.name === name && d.id !== database.id)) {
      throw new ConflictError('database_name_taken', `Database '${name}' exists`);
    }
    // Mutate in place, as an ORM's identity map would.
    database.name = name;
    return database;
  }

  /** Per deleted database: from when it is due to be dropped, and whether it was. */
  private readonly retention = new Map<string, { purgeAfter: Date; dropped: boolean }>();

  async markDeleted(database: Database, when: { deleted: Date; purgeAfter: Date }): Promise<Database | null> {
    this.log.push(`markDeleted:${database.id}`);
    if (database.deleted) return null;
    database.deleted = when.deleted;
    this.retention.set(database.id, { purgeAfter: when.purgeAfter, dropped: false });
    return { ...database };
  }

  private restorable(workspace: Workspace, id: string, now: Date): Database | undefined {
    return this.rows.find((d) => {
      const kept = this.retention.get(d.id);
      return d.deleted && d.workspace.id === workspace.id && d.id === id && kept && !kept.dropped && kept.purgeAfter > now;
    });
  }

  async listDeletedPage(workspace: Workspace, page: PageRequest, now: Date): Promise<Page<Database>> {
    return pageAfterId(this.rows.filter((d) => this.restorable(workspace, d.id, now)), page);
  }

  async restore(workspace: Workspace, id: string, input: { name?: string; now: Date }): Promise<Database | null> {
    this.log.push(`restore:${id}`);
    const database = this.restorable(workspace, id, input.now);
    if (!database) return null;
    const name = input.name ?? database.name;
    if (this.rows.some((d) => !d.deleted && d.workspace.id === workspace.id && d.name === name)) {
      throw new ConflictError('database_name_taken', `Database '${name}' exists`);
    }
    Object.assign(database, { name, deleted: null });
    this.retention.delete(id);
    return database;
  }

  async endRetention(workspace: Workspace, id: string, now: Date): Promise<Database | null> {
    this.log.push(`endRetention:${id}`);
    const database = this.restorable(workspace, id, now);
    if (!database) return null;
    this.retention.set(id, { purgeAfter: now, dropped: false });
    return database;
  }
}

export class FakeClusters implements ClusterDirectory {
  constructor(private readonly served: readonly Region[]) {}

  regions(): readonly Region[] {
    return this.served;
  }

  forRegion(): ClusterDriver {
    throw new Error('the use cases must not reach a cluster directly');
  }

  forDatabase(): ClusterDriver {
    throw new Error('the use cases must not reach a cluster directly');
  }
}

export class RecordingProvisioner implements Provisioner {
  constructor(private readonly log: string[]) {}

  nudge(): void {
    this.log.push('nudge');
  }

  async settleNow(databaseId: string): Promise<void> {
    this.log.push(`settleNow:${databaseId}`);
  }
}

/** Backups that reach back to `from` (null: none restorable yet); `configured` false: the cluster is not backed up here. */
export class FakeCopier implements DatabaseCopier {
  configured = true;
  from: Date | null = new Date('2026-01-01T12:00:00Z');

  async restorableFrom(): Promise<{ from: Date | null } | null> {
    return this.configured ? { from: this.from } : null;
  }

  async copy(): Promise<void> {
    throw new Error('the use cases must not copy: the provisioner does');
  }

  async discard(): Promise<void> {
    throw new Error('the use cases must not copy: the provisioner does');
  }
}
