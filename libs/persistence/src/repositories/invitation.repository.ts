import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalidCursor, isUuid, keyedPageOf, type Page, type PageRequest, type WorkspaceInvitation, type WorkspaceInvitationRepository, type WorkspaceRole } from '@platform/domain';

interface InvitationRow {
  id: string;
  workspace_id: string;
  workspace_name: string;
  workspace_slug: string;
  email: string;
  role: string;
  created: Date | string;
  expires: Date | string;
}

const COLUMNS = `i.id, i.workspace_id, w.name as workspace_name, w.slug as workspace_slug, i.email, i.role, i.created, i.expires`;
const FROM = `workspace_invitations i join workspaces w on w.id = i.workspace_id`;
/** Emails compare as the developers' unique index does, so an invitation finds the account it names. */
const FOR_EMAIL = `lower(i.email) = lower(?)`;

function toInvitation(row: InvitationRow): WorkspaceInvitation {
  if (row.role !== 'owner' && row.role !== 'member') throw new Error(`unknown workspace role '${row.role}'`);
  const role: WorkspaceRole = row.role;
  return {
    id: row.id,
    workspace: { id: row.workspace_id, name: row.workspace_name, slug: row.workspace_slug },
    email: row.email,
    role,
    created: new Date(row.created),
    expires: new Date(row.expires),
  };
}

/**
 * One `select` of invitations with their workspace, in list order: by (created to the millisecond,
 * id), the key a page's cursor carries.
 */
function selectInvitations(where: string, limit = ''): string {
  return `select ${COLUMNS} from ${FROM} where ${where} order by ${PAGE_KEY} ${limit}`;
}
const PAGE_KEY = `date_trunc('milliseconds', i.created), i.id`;

/**
 * Deletes and answers a workspace's unexpired invitation for `email`, through `tx`: the membership
 * editor's transaction, so the invitation is spent in the transaction that adds its invitee.
 */
export async function takeInvitation(tx: EntityManager, workspaceId: string, id: string, email: string, now: Date): Promise<WorkspaceInvitation | null> {
  const [taken] = await tx.execute<InvitationRow[]>(
    `with taken as (
       delete from workspace_invitations i where i.id = ? and i.workspace_id = ? and ${FOR_EMAIL} and i.expires > ? returning i.*
     )
     select t.id, t.workspace_id, w.name as workspace_name, w.slug as workspace_slug, t.email, t.role, t.created, t.expires
       from taken t join workspaces w on w.id = t.workspace_id`,
    [id, workspaceId, email, now],
  );
  return taken ? toInvitation(taken) : null;
}

/** Pending workspace invitations in the control plane. */
export class SqlWorkspaceInvitations implements WorkspaceInvitationRepository {
  constructor(private readonly em: EntityManager) {}

  private async rows(sql: string, params: unknown[]): Promise<WorkspaceInvitation[]> {
    return (await this.em.execute<InvitationRow[]>(sql, params)).map(toInvitation);
  }

  async create(input: Parameters<WorkspaceInvitationRepository['create']>[0]): Promise<WorkspaceInvitation | null> {
    const id = randomUUID();
    const created = await this.em.transactional(async (tx) => {
      // The workspace's membership lock (see editMembers): invitations of one workspace are counted
      // and written one at a time, so two at the cap cannot both pass.
      await tx.execute('select id from workspaces where id = ? for no key update', [input.workspaceId]);
      const [{ pending }] = await tx.execute<{ pending: number }[]>(
        'select count(*)::int as pending from workspace_invitations where workspace_id = ? and expires > ? and lower(email) <> lower(?)',
        [input.workspaceId, input.created, input.email],
      );
      if (pending >= input.maxPending) return false;
      // Expired invitations of the workspace go when an owner invites: they are kept no longer than
      // the workspace keeps inviting, and nothing reads them.
      await tx.execute('delete from workspace_invitations where workspace_id = ? and expires <= ?', [input.workspaceId, input.created]);
      await tx.execute(
        `insert into workspace_invitations (id, workspace_id, email, role, invited_by, created, expires) values (?, ?, ?, ?, ?, ?, ?)
         on conflict (workspace_id, lower(email)) do update
           set id = excluded.id, email = excluded.email, role = excluded.role, invited_by = excluded.invited_by,
               created = excluded.created, expires = excluded.expires`,
        [id, input.workspaceId, input.email, input.role, input.invitedBy, input.created, input.expires],
      );
      return true;
    });
    if (!created) return null;
    const [invitation] = await this.rows(selectInvitations('i.id = ?'), [id]);
    return invitation;
  }

  async listForWorkspace(workspaceId: string, now: Date): Promise<WorkspaceInvitation[]> {
    return this.rows(selectInvitations('i.workspace_id = ? and i.expires > ?'), [workspaceId, now]);
  }

  async listForEmail(email: string, now: Date, page: PageRequest): Promise<Page<WorkspaceInvitation>> {
    // Any number of workspaces may invite one email: the page is cut here, not after reading them all.
    if (page.afterId === null) {
      return keyedPageOf(await this.rows(selectInvitations(`${FOR_EMAIL} and i.expires > ?`, 'limit ?'), [email, now, page.limit + 1]), page);
    }
    // The cursor is the last item's key, so the next page is found even when that invitation has gone since.
    if (page.afterAt === undefined || !isUuid(page.afterId)) throw invalidCursor();
    const rows = await this.rows(selectInvitations(`${FOR_EMAIL} and i.expires > ? and (${PAGE_KEY}) > (?::timestamptz, ?::uuid)`, 'limit ?'), [
      email,
      now,
      new Date(page.afterAt),
      page.afterId,
      page.limit + 1,
    ]);
    return keyedPageOf(rows, page);
  }

  async findForEmail(id: string, email: string, now: Date): Promise<WorkspaceInvitation | null> {
    const [found] = await this.rows(selectInvitations(`i.id = ? and ${FOR_EMAIL} and i.expires > ?`), [id, email, now]);
    return found ?? null;
  }

  async revoke(workspaceId: string, id: string, now: Date): Promise<boolean> {
    const deleted = await this.em.execute<{ id: string }[]>('delete from workspace_invitations where id = ? and workspace_id = ? and expires > ? returning id', [
      id,
      workspaceId,
      now,
    ]);
    return deleted.length > 0;
  }

  async decline(id: string, email: string, now: Date): Promise<boolean> {
    const deleted = await this.em.execute<{ id: string }[]>(
      'delete from workspace_invitations i where i.id = ? and lower(i.email) = lower(?) and i.expires > ? returning i.id',
      [id, email, now],
    );
    return deleted.length > 0;
  }
}
