import type { EntityManager } from '@mikro-orm/postgresql';
import type { OAuthClient, OAuthClientRepository, OAuthClientType } from '@platform/domain';
import { DeveloperEntity } from '../entities/developer.entity.js';
import { OAuthClientEntity, type OAuthClientRow } from '../entities/oauth-client.entity.js';
import { WorkspaceEntity } from '../entities/workspace.entity.js';

function toClient(row: OAuthClientRow): OAuthClient {
  return {
    id: row.id,
    workspaceId: row.workspace?.id ?? null,
    name: row.name,
    type: row.type,
    redirectUris: [...row.redirectUris],
    created: row.created,
  };
}

/** Clients are reached through their workspace, except by the token endpoint, which has only an id. */
export class MikroOAuthClientRepository implements OAuthClientRepository {
  constructor(private readonly em: EntityManager) {}

  async create(input: {
    id: string;
    workspaceId: string;
    name: string;
    type: OAuthClientType;
    secretDigest: string | null;
    redirectUris: string[];
    createdBy: string;
  }): Promise<OAuthClient> {
    const row = this.em.create(OAuthClientEntity, {
      id: input.id,
      workspace: this.em.getReference(WorkspaceEntity, input.workspaceId),
      name: input.name,
      type: input.type,
      secretDigest: input.secretDigest,
      redirectUris: input.redirectUris,
      createdBy: this.em.getReference(DeveloperEntity, input.createdBy),
    });
    await this.em.flush();
    return toClient(row);
  }

  async listForWorkspace(workspaceId: string): Promise<OAuthClient[]> {
    const rows = await this.em.find(OAuthClientEntity, { workspace: workspaceId, deleted: null }, { orderBy: { created: 'asc', id: 'asc' } });
    return rows.map(toClient);
  }

  async find(workspaceId: string, id: string): Promise<OAuthClient | null> {
    const row = await this.em.findOne(OAuthClientEntity, { id, workspace: workspaceId, deleted: null });
    return row ? toClient(row) : null;
  }

  async findForAuthentication(id: string): Promise<{ client: OAuthClient; secretDigest: string | null } | null> {
    const row = await this.em.findOne(OAuthClientEntity, { id, deleted: null }, { populate: ['secretDigest'] });
    return row ? { client: toClient(row), secretDigest: row.secretDigest ?? null } : null;
  }

  async setSecretDigest(workspaceId: string, id: string, digest: string): Promise<boolean> {
    const updated = await this.em.nativeUpdate(
      OAuthClientEntity,
      { id, workspace: workspaceId, deleted: null, type: 'confidential' },
      { secretDigest: digest, secretRotated: new Date() },
    );
    return updated > 0;
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    // One statement: the client goes, and so does every refresh-token family issued to it.
    const rows = await this.em.execute<{ id: string }[]>(
      `with gone as (
         update oauth_clients set deleted = now() where id = ? and workspace_id = ? and deleted is null returning id
       ), revoked as (
         update token_families set revoked = now() where client_id in (select id from gone) and revoked is null
       )
       select id from gone`,
      [id, workspaceId],
    );
    return rows.length > 0;
  }
}
