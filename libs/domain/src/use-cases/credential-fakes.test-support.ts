// In-memory fakes of the credential ports, for the use cases that create, list and end credentials.
import type { Credential, CredentialRepository, LoginRoles, NewCredential } from '../credential-ports.js';
import type { Database } from '../model.js';
import { NOW } from './fakes.test-support.js';

/** Records in memory; `failNextCreate` makes the next recording fail as a lost control plane would. */
export class FakeCredentials implements CredentialRepository {
  readonly rows: (Credential & { deleted: boolean })[] = [];
  failNextCreate = false;

  async create(input: { id: string; databaseId: string; tenantId: string | null; internal: boolean }): Promise<Credential> {
    if (this.failNextCreate) throw new Error('control plane unreachable');
    this.rows.push({ ...input, created: NOW, deleted: false });
    return { ...input, created: NOW };
  }

  async listForDatabase(databaseId: string, filter: { tenantId?: string; internal: boolean }): Promise<Credential[]> {
    return this.live(databaseId).filter((row) => row.internal === filter.internal && (filter.tenantId === undefined || row.tenantId === filter.tenantId));
  }

  async find(databaseId: string, id: string): Promise<Credential | null> {
    return this.live(databaseId).find((row) => row.id === id) ?? null;
  }

  /** One at a time, as the real lock makes them. */
  async createCounted<T>(databaseId: string, create: (live: number, record: (input: NewCredential) => Promise<Credential>) => Promise<T>): Promise<T> {
    const previous = this.serial;
    let release = () => {};
    this.serial = new Promise<void>((resolve) => (release = resolve));
    await previous;
    try {
      const live = this.live(databaseId).filter((row) => !row.internal).length;
      return await create(live, (input) => this.create({ ...input, databaseId }));
    } finally {
      release();
    }
  }

  private serial: Promise<void> = Promise.resolve();

  async markDeleted(databaseId: string, id: string): Promise<void> {
    for (const row of this.rows) if (row.databaseId === databaseId && row.id === id) row.deleted = true;
  }

  private live(databaseId: string): Credential[] {
    return this.rows.filter((row) => row.databaseId === databaseId && !row.deleted).map(({ deleted: _deleted, ...credential }) => credential);
  }
}

/** Roles by name, numbered; every call is logged as `create <database> <role>` or `drop <database> <role>`. */
export class FakeLoginRoles implements LoginRoles {
  readonly roles = new Map<string, { password: string; tenantId: string | null }>();
  readonly calls: string[] = [];
  private serial = 0;

  async createLoginRole(database: Database, input: { password: string; tenantId: string | null }): Promise<string> {
    const name = `cred_${++this.serial}`;
    this.calls.push(`create ${database.name} ${name}`);
    this.roles.set(name, input);
    return name;
  }

  async dropLoginRole(database: Database, roleName: string): Promise<void> {
    this.calls.push(`drop ${database.name} ${roleName}`);
    this.roles.delete(roleName);
  }
}
