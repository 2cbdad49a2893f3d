import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, type Workspace, type WorkspaceRepository } from '@platform/domain';
import { DeveloperEntity } from '../entities/developer.entity.js';
import { WorkspaceEntity, WorkspaceMemberEntity } from '../entities/workspace.entity.js';
import { isUniqueViolation } from '../errors.js';
import { toWorkspace } from './mappers.js';

export class MikroWorkspaceRepository implements WorkspaceRepository {
  constructor(private readonly em: EntityManager) {}

  async create(input: { name: string; slug: string; ownerId: string }): Promise<Workspace> {
    try {
      return await this.em.transactional(async (tx) => {
        const workspace = tx.create(WorkspaceEntity, { id: randomUUID(), name: input.name, slug: input.slug, billingCustomerId: null });
        tx.create(WorkspaceMemberEntity, {
          workspace,
          developer: tx.getReference(DeveloperEntity, input.ownerId),
          role: 'owner',
        });
        await tx.flush();
        return toWorkspace(workspace);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'workspaces_slug_unique')) {
        throw new ConflictError('workspace_slug_taken', `Workspace slug '${input.slug}' is already taken`, { cause: error });
      }
      throw error;
    }
  }

  async listForDeveloper(developerId: string): Promise<Workspace[]> {
    const memberships = await this.em.find(
      WorkspaceMemberEntity,
      { developer: developerId },
      { populate: ['workspace'], orderBy: { workspace: { created: 'asc', id: 'asc' } } },
    );
    return memberships.map((member) => toWorkspace(member.workspace));
  }

  async findById(id: string): Promise<Workspace | null> {
    const row = await this.em.findOne(WorkspaceEntity, { id });
    return row ? toWorkspace(row) : null;
  }

  async findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null> {
    const member = await this.em.findOne(
      WorkspaceMemberEntity,
      { developer: developerId, workspace: { slug } },
      { populate: ['workspace'] },
    );
    return member ? toWorkspace(member.workspace) : null;
  }
}
