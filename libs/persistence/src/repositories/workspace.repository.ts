import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ConflictError,
  NotFoundError,
  type Workspace,
  type WorkspaceInvitation,
  type WorkspaceMember,
  type WorkspaceMemberEditor,
  type WorkspaceRepository,
  type WorkspaceRole,
} from '@platform/domain';
import { DeveloperEntity } from '../entities/developer.entity.js';
import { WorkspaceEntity, WorkspaceMemberEntity } from '../entities/workspace.entity.js';
import { isUniqueViolation } from '../errors.js';
import { takeInvitation } from './invitation.repository.js';
import { toWorkspace } from './mappers.js';

interface MemberRow {
  developer_id: string;
  email: string;
  name: string | null;
  role: string;
  added: Date | string;
}

const MEMBER_COLUMNS = 'm.developer_id, d.email, d.name, m.role, m.created as added';

function toMember(row: MemberRow): WorkspaceMember {
  if (row.role !== 'owner' && row.role !== 'member') throw new Error(`unknown workspace role '${row.role}'`);
  return { developerId: row.developer_id, email: row.email, name: row.name ?? null, role: row.role, added: new Date(row.added) };
}

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

  async findForLiveClient(clientId: string): Promise<Workspace | null> {
    const rows = await this.em.execute<{ id: string; name: string; slug: string; billing_customer_id: string | null; created: Date | string }[]>(
      `select w.id, w.name, w.slug, w.billing_customer_id, w.created
         from oauth_clients c join workspaces w on w.id = c.workspace_id
        where c.id = ? and c.deleted is null`,
      [clientId],
    );
    if (rows.length === 0) return null;
    const [row] = rows;
    return { id: row.id, name: row.name, slug: row.slug, billingCustomerId: row.billing_customer_id, created: new Date(row.created) };
  }

  async findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null> {
    const member = await this.em.findOne(
      WorkspaceMemberEntity,
      { developer: developerId, workspace: { slug } },
      { populate: ['workspace'] },
    );
    return member ? toWorkspace(member.workspace) : null;
  }

  async listMembers(workspaceId: string): Promise<WorkspaceMember[]> {
    const rows = await this.em.execute<MemberRow[]>(
      `select ${MEMBER_COLUMNS} from workspace_members m join developers d on d.id = m.developer_id
        where m.workspace_id = ? order by m.created, m.developer_id`,
      [workspaceId],
    );
    return rows.map(toMember);
  }

  /**
   * Serializes membership changes per workspace: every editor first takes the workspace row
   * `for no key update` (which conflicts with itself, not with inserting databases or clients
   * that reference the workspace), then reads the members `for update`. Under read committed each
   * later statement sees what the previous lock holder committed.
   */
  async editMembers<T>(workspaceId: string, edit: (members: WorkspaceMember[], editor: WorkspaceMemberEditor) => Promise<T>): Promise<T> {
    return this.em.transactional(async (tx) => {
      const locked = await tx.execute<{ id: string }[]>('select id from workspaces where id = ? for no key update', [workspaceId]);
      if (locked.length === 0) throw new NotFoundError('workspace_not_found', 'Workspace not found');
      const rows = await tx.execute<MemberRow[]>(
        `select ${MEMBER_COLUMNS} from workspace_members m join developers d on d.id = m.developer_id
          where m.workspace_id = ? order by m.created, m.developer_id for update of m`,
        [workspaceId],
      );
      return edit(rows.map(toMember), new LockedMemberEditor(tx, workspaceId));
    });
  }
}

/** Writes through the transaction that holds the workspace's membership lock. */
class LockedMemberEditor implements WorkspaceMemberEditor {
  constructor(
    private readonly tx: EntityManager,
    private readonly workspaceId: string,
  ) {}

  async add(developerId: string, role: WorkspaceRole): Promise<WorkspaceMember> {
    try {
      await this.tx.execute('insert into workspace_members (workspace_id, developer_id, role, created) values (?, ?, ?, now())', [
        this.workspaceId,
        developerId,
        role,
      ]);
    } catch (error) {
      if (isUniqueViolation(error, 'workspace_members_pkey')) {
        throw new ConflictError('already_member', 'The developer is already a member of the workspace', { cause: error });
      }
      throw error;
    }
    return this.find(developerId);
  }

  async setRole(developerId: string, role: WorkspaceRole): Promise<WorkspaceMember> {
    await this.tx.execute('update workspace_members set role = ? where workspace_id = ? and developer_id = ?', [role, this.workspaceId, developerId]);
    return this.find(developerId);
  }

  async remove(developerId: string): Promise<void> {
    await this.tx.execute('delete from workspace_members where workspace_id = ? and developer_id = ?', [this.workspaceId, developerId]);
  }

  takeInvitation(id: string, email: string, now: Date): Promise<WorkspaceInvitation | null> {
    return takeInvitation(this.tx, this.workspaceId, id, email, now);
  }

  private async find(developerId: string): Promise<WorkspaceMember> {
    const [row] = await this.tx.execute<MemberRow[]>(
      `select ${MEMBER_COLUMNS} from workspace_members m join developers d on d.id = m.developer_id
        where m.workspace_id = ? and m.developer_id = ?`,
      [this.workspaceId, developerId],
    );
    if (!row) throw new NotFoundError('member_not_found', `Developer '${developerId}' is not a member of the workspace`);
    return toMember(row);
  }
}
