import { ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import { requireDeveloper } from '../authorization.js';
import type { Developer, DeveloperPrincipal, Principal, Workspace } from '../model.js';
import type { Page, PageRequest } from '../paging.js';
import type { Clock, DeveloperRepository, WorkspaceInvitation, WorkspaceInvitationRepository, WorkspaceMember, WorkspaceRole } from '../ports.js';
import { getWorkspace, requireWorkspaceOwner, type WorkspaceDeps } from './workspaces.js';

/*
 * Membership by invitation, with the invitee's consent. An owner invites an email, whoever it
 * belongs to: the answer is the same for an email with an account and one without, so inviting
 * tells nobody which emails have accounts. The developer with that email sees the invitation and
 * accepts or declines it; until then they are not a member.
 */

/** How long an invitation waits for its invitee. */
export const INVITATION_TTL_DAYS = 7;
const INVITATION_TTL_MS = INVITATION_TTL_DAYS * 24 * 60 * 60 * 1000;
/**
 * Pending invitations a workspace may have at once: each puts the workspace's name, which its
 * owner chose, in someone else's list of invitations, so an owner must not be able to fill
 * anyone's list.
 */
export const INVITATIONS_PER_WORKSPACE = 50;
/**
 * What an invitation makes its invitee. Never `owner`: developers sign up with emails nobody
 * verified, so an invitation goes to whoever registered the email, and an owner could hand the
 * workspace to a stranger by naming a colleague's address. Owners promote members they know.
 */
export const INVITED_ROLE: WorkspaceRole = 'member';

export type InvitationDeps = WorkspaceDeps & {
  invitations: WorkspaceInvitationRepository;
  developers: Pick<DeveloperRepository, 'findById'>;
  clock: Clock;
};

/** What an invitee gets on accepting: the workspace and their membership of it. */
export interface AcceptedInvitation {
  workspace: Workspace;
  member: WorkspaceMember;
}

/** Another developer's invitation, an expired, spent or revoked one: all alike not found. */
function invitationNotFound(id: string): NotFoundError {
  return new NotFoundError('invitation_not_found', `Invitation '${id}' not found`);
}

const sameEmail = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * An owner invites an email to the workspace, as a member (INVITED_ROLE). An email that already
 * belongs to a member is 409 already_member: every member can list the members with their emails,
 * so this tells the owner nothing new, and it says nothing about emails outside the workspace. No
 * account is looked up: registered and unknown emails take the same path. Past
 * INVITATIONS_PER_WORKSPACE pending invitations, 409 invitation_quota_exceeded and nothing changes;
 * inviting a pending email again replaces its invitation and counts once.
 */
export async function inviteMember(deps: InvitationDeps, caller: Principal, slug: string, input: { email: string }): Promise<WorkspaceInvitation> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, slug);
  const members = await requireWorkspaceOwner(deps, developer, workspace, 'invite members');
  const member = members.find((each) => sameEmail(each.email, input.email));
  if (member) throw new ConflictError('already_member', `${member.email} is already a member of the workspace`);
  const created = deps.clock.now();
  const invitation = await deps.invitations.create({
    workspaceId: workspace.id,
    email: input.email,
    role: INVITED_ROLE,
    invitedBy: developer.developerId,
    created,
    expires: new Date(created.getTime() + INVITATION_TTL_MS),
    maxPending: INVITATIONS_PER_WORKSPACE,
  });
  if (!invitation) {
    throw new ConflictError(
      'invitation_quota_exceeded',
      `Workspace '${workspace.slug}' has ${INVITATIONS_PER_WORKSPACE} pending invitations, its quota; revoke one or wait for one to be answered or expire`,
    );
  }
  return invitation;
}

/**
 * The workspace's pending invitations, for its owners only: they name people who have not agreed
 * to be associated with the workspace.
 */
export async function listInvitations(deps: InvitationDeps, caller: Principal, slug: string): Promise<WorkspaceInvitation[]> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, slug);
  await requireWorkspaceOwner(deps, developer, workspace, 'see invitations');
  return deps.invitations.listForWorkspace(workspace.id, deps.clock.now());
}

/** An owner withdraws a pending invitation; it can no longer be accepted. */
export async function revokeInvitation(deps: InvitationDeps, caller: Principal, slug: string, id: string): Promise<void> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, slug);
  await requireWorkspaceOwner(deps, developer, workspace, 'revoke invitations');
  if (!(await deps.invitations.revoke(workspace.id, id, deps.clock.now()))) throw invitationNotFound(id);
}

/**
 * The signed-in developer, for their own invitations. A token bound to one workspace (its
 * client's) must not reach other workspaces, so it cannot see or answer invitations.
 */
async function invitee(deps: InvitationDeps, caller: Principal): Promise<{ principal: DeveloperPrincipal; developer: Developer }> {
  const principal = requireDeveloper(caller);
  if (principal.workspaceId !== undefined) {
    throw new ForbiddenError('workspace_bound_token', 'This token is bound to one workspace and cannot answer invitations to others');
  }
  const developer = await deps.developers.findById(principal.developerId);
  if (!developer) throw new UnauthenticatedError('invalid_token', 'The developer of this token no longer exists');
  return { principal, developer };
}

/**
 * A page of the pending invitations for the signed-in developer's email, whichever workspace sent
 * them: paged where they are stored, since any number of workspaces may invite one email.
 */
export async function listMyInvitations(deps: InvitationDeps, caller: Principal, page: PageRequest): Promise<Page<WorkspaceInvitation>> {
  const { developer } = await invitee(deps, caller);
  return deps.invitations.listForEmail(developer.email, deps.clock.now(), page);
}

/**
 * The invitee joins the workspace as a member, and the invitation is spent: an `owner` invitation
 * made before invitations granted `member` only joins as a member too. An invitation for another
 * email answers as if it did not exist. Someone who became a member meanwhile keeps the role they
 * have: an invitation is consent to join, not to a role change.
 */
export async function acceptInvitation(deps: InvitationDeps, caller: Principal, id: string): Promise<AcceptedInvitation> {
  const { principal, developer } = await invitee(deps, caller);
  const now = deps.clock.now();
  const invitation = await deps.invitations.findForEmail(id, developer.email, now);
  if (!invitation) throw invitationNotFound(id);
  const member = await deps.workspaces.editMembers(invitation.workspace.id, async (members, editor) => {
    // Taken under the membership lock: revoked, declined or accepted since the read above, it is gone.
    const taken = await editor.takeInvitation(id, developer.email, now);
    if (!taken) throw invitationNotFound(id);
    const existing = members.find((each) => each.developerId === principal.developerId);
    return existing ?? editor.add(principal.developerId, INVITED_ROLE);
  });
  const workspace = await deps.workspaces.findById(invitation.workspace.id);
  if (!workspace) throw invitationNotFound(id);
  return { workspace, member };
}

/** The invitee says no; the invitation is gone, and an owner may invite them again. */
export async function declineInvitation(deps: InvitationDeps, caller: Principal, id: string): Promise<void> {
  const { developer } = await invitee(deps, caller);
  if (!(await deps.invitations.decline(id, developer.email, deps.clock.now()))) throw invitationNotFound(id);
}
