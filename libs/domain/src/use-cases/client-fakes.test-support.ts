// In-memory fakes of the OAuth client ports, for the client use cases (and fakePlatform).
import type { OAuthClient } from '../model.js';
import type { OAuthClientRepository } from '../ports.js';
import type { ClientSecrets } from './clients.js';
import { NOW, unused } from './fake-basics.test-support.js';

/** OAuth clients by workspace; deleted ones disappear. */
export class FakeClients implements OAuthClientRepository {
  readonly rows: (OAuthClient & { secretDigest: string | null; createdBy: string })[] = [];

  async create(input: Parameters<OAuthClientRepository['create']>[0]): Promise<OAuthClient> {
    this.rows.push({ ...input, created: NOW });
    return this.present(this.rows[this.rows.length - 1]);
  }

  async listForWorkspace(workspaceId: string): Promise<OAuthClient[]> {
    return this.rows.filter((row) => row.workspaceId === workspaceId).map((row) => this.present(row));
  }

  async find(workspaceId: string, id: string): Promise<OAuthClient | null> {
    const row = this.rows.find((candidate) => candidate.workspaceId === workspaceId && candidate.id === id);
    return row ? this.present(row) : null;
  }

  async setSecretDigest(workspaceId: string, id: string, digest: string): Promise<boolean> {
    const row = this.rows.find((candidate) => candidate.workspaceId === workspaceId && candidate.id === id);
    if (row) row.secretDigest = digest;
    return row !== undefined;
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    const index = this.rows.findIndex((row) => row.workspaceId === workspaceId && row.id === id);
    if (index >= 0) this.rows.splice(index, 1);
    return index >= 0;
  }

  findForAuthentication = unused;

  private present(row: OAuthClient & { secretDigest: string | null; createdBy: string }): OAuthClient {
    return { id: row.id, workspaceId: row.workspaceId, name: row.name, type: row.type, redirectUris: row.redirectUris, created: row.created };
  }
}

/** Numbered ids and secrets; a digest is the secret, reversed. */
export class FakeClientSecrets implements ClientSecrets {
  private serial = 0;

  newClientId(): string {
    return `client-${++this.serial}`;
  }

  generate(): { secret: string; digest: string } {
    const secret = `secret-${++this.serial}`;
    return { secret, digest: [...secret].reverse().join('') };
  }

  matches(secret: string, digest: string): boolean {
    return [...secret].reverse().join('') === digest;
  }
}
