import { randomBytes } from 'node:crypto';
import { cleanWorkspaceName } from '../account-rules.js';
import { ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import { requireDeveloper, requireManagement } from '../authorization.js';
import type { ClientPrincipal, Developer, DeveloperPrincipal, Principal, Workspace } from '../model.js';
import type { DeveloperRepository, WorkspaceMember, WorkspaceRepository, WorkspaceRole } from '../ports.js';
import { assertWorkspaceSlug, slugFromName } from '../workspace-slug.js';

export interface WorkspaceDeps {
  workspaces: WorkspaceRepository;
}

export const WORKSPACE_ROLES = ['owner', 'member'] as const satisfies readonly WorkspaceRole[];

function workspaceNotFound(slug: string): NotFoundError {
  return new NotFoundError('workspace_not_found', `Workspace '${slug}' not found`);
}

/**
 * Creates a workspace owned by the caller. An explicit slug that is taken is a conflict; a slug
 * derived from the name gets a random suffix instead, since the caller did not choose it.
 */
export async function createWorkspace(
  deps: WorkspaceDeps,
  caller: Principal,
  input: { name: string; slug?: string },
): Promise<Workspace> {
  const developer = requireDeveloper(caller);
  if (developer.workspaceId !== undefined) {
    // A token issued to one workspace's client must not reach beyond that workspace.
    throw new ForbiddenError('workspace_bound_token', 'This token is bound to one workspace and cannot create workspaces');
  }
  const name = cleanWorkspaceName(input.name);
  if (input.slug !== undefined) {
    assertWorkspaceSlug(input.slug);
    return deps.workspaces.create({ name, slug: input.slug, ownerId: developer.developerId });
  }
  const base = slugFromName(name);
  for (let attempt = 0; ; attempt++) {
    const slug = attempt === 0 ? base : `${base}-${randomBytes(4).toString('hex').slice(0, 6)}`;
    try {
      return await deps.workspaces.create({ name, slug, ownerId: developer.developerId });
    } catch (error) {
      if (!(error instanceof ConflictError) || attempt >= 3) throw error;
    }
  }
}

/**
 * A client token's workspace, read with the client on every request: deleting the client ends
 * its tokens at once (they carry no refresh-token family to revoke). A token whose client is gone
 * is no longer a credential at all: 401, so its holder fetches a new one rather than reading a 404
 * as "this workspace does not exist".
 */
async function clientWorkspace(deps: WorkspaceDeps, client: ClientPrincipal): Promise<Workspace> {
  const own = await deps.workspaces.findForLiveClient(client.clientId);
  if (own?.id !== client.workspaceId) throw new UnauthenticatedError('invalid_token', 'The OAuth client of this token has been deleted');
  return own;
}

/**
 * The caller's workspaces. A developer token bound to one workspace (issued to that workspace's
 * client) lists that workspace only, and only while its developer still belongs to it.
 */
export async function listWorkspaces(deps: WorkspaceDeps, caller: Principal): Promise<Workspace[]> {
  const manager = requireManagement(caller);
  if (manager.kind === 'client') {
    return [await clientWorkspace(deps, manager)];
  }
  const workspaces = await deps.workspaces.listForDeveloper(manager.developerId);
  const boundTo = manager.workspaceId;
  return boundTo === undefined ? workspaces : workspaces.filter((workspace) => workspace.id === boundTo);
}

/**
 * A workspace the caller does not belong to answers exactly like one that does not exist; so does
 * any workspace but its own for a token bound to one workspace.
 */
export async function getWorkspace(deps: WorkspaceDeps, caller: Principal, slug: string): Promise<Workspace> {
  const manager = requireManagement(caller);
  const found =
    manager.kind === 'client'
      ? await clientWorkspace(deps, manager).then((own) => (own.slug === slug ? own : null))
      : await deps.workspaces.findBySlugForDeveloper(slug, manager.developerId);
  const boundTo = manager.workspaceId;
  if (!found || (boundTo !== undefined && found.id !== boundTo)) throw workspaceNotFound(slug);
  return found;
}

/** The workspace's members, for anyone who may see the workspace (its clients included). */
export async function listMembers(deps: WorkspaceDeps, caller: Principal, slug: string): Promise<WorkspaceMember[]> {
  const workspace = await getWorkspace(deps, caller, slug);
  return deps.workspaces.listMembers(workspace.id);
}

/**
 * The caller as a member, under the membership lock. A caller removed since `getWorkspace` finds
 * nothing, as anyone outside would.
 */
function callerAmong(members: WorkspaceMember[], developer: DeveloperPrincipal, slug: string): WorkspaceMember {
  const me = members.find((member) => member.developerId === developer.developerId);
  if (!me) throw workspaceNotFound(slug);
  return me;
}

/**
 * Refuses (403 owner_required) a developer who is a plain member of the workspace: some changes
 * (its OAuth clients and their secrets, its invitations) are its owners' only. Answers the members.
 */
export async function requireWorkspaceOwner(deps: WorkspaceDeps, developer: DeveloperPrincipal, workspace: Workspace, action: string): Promise<WorkspaceMember[]> {
  const members = await deps.workspaces.listMembers(workspace.id);
  requireOwner(callerAmong(members, developer, workspace.slug), action);
  return members;
}

function requireOwner(me: WorkspaceMember, action: string): void {
  if (me.role !== 'owner') throw new ForbiddenError('owner_required', `Only an owner of the workspace can ${action}`);
}

function memberNotFound(developerId: string): NotFoundError {
  return new NotFoundError('member_not_found', `Developer '${developerId}' is not a member of the workspace`);
}

/** A workspace always keeps an owner: the last one can be neither removed nor demoted. */
function assertAnotherOwner(members: WorkspaceMember[], target: WorkspaceMember): void {
  if (target.role !== 'owner') return;
  if (!members.some((member) => member.role === 'owner' && member.developerId !== target.developerId)) {
    throw new ConflictError('last_owner', 'The workspace must keep an owner: make another member owner first');
  }
}

/** An owner changes a member's role (their own included, while another owner remains). */
export async function changeMemberRole(
  deps: WorkspaceDeps,
  caller: Principal,
  slug: string,
  developerId: string,
  role: WorkspaceRole,
): Promise<WorkspaceMember> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, slug);
  return deps.workspaces.editMembers(workspace.id, async (members, editor) => {
    requireOwner(callerAmong(members, developer, slug), 'change roles');
    const target = members.find((member) => member.developerId === developerId);
    if (!target) throw memberNotFound(developerId);
    if (target.role === role) return target;
    if (role !== 'owner') assertAnotherOwner(members, target);
    return editor.setRole(developerId, role);
  });
}

/** An owner removes a member; any member may remove themself (leave). */
export async function removeMember(deps: WorkspaceDeps, caller: Principal, slug: string, developerId: string): Promise<void> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, slug);
  await deps.workspaces.editMembers(workspace.id, async (members, editor) => {
    const me = callerAmong(members, developer, slug);
    if (developerId !== me.developerId) requireOwner(me, 'remove other members');
    const target = members.find((member) => member.developerId === developerId);
    if (!target) throw memberNotFound(developerId);
    assertAnotherOwner(members, target);
    await editor.remove(developerId);
  });
}

/**
 * Makes sure a developer and a workspace of theirs exist: the first-run path of a local
 * installation, before the OAuth service signs developers up.
 */
export async function bootstrapDeveloper(
  deps: WorkspaceDeps & { developers: Pick<DeveloperRepository, 'ensure'> },
  input: { email: string; name: string | null; workspaceName: string; workspaceSlug: string },
): Promise<{ developer: Developer; workspace: Workspace }> {
  const developer = await deps.developers.ensure({ email: input.email, name: input.name });
  const caller: Principal = { kind: 'developer', developerId: developer.id, scopes: [] };
  const existing = await deps.workspaces.findBySlugForDeveloper(input.workspaceSlug, developer.id);
  const workspace =
    existing ?? (await createWorkspace(deps, caller, { name: input.workspaceName, slug: input.workspaceSlug }));
  return { developer, workspace };
}

/**
 * The signed-in developer and the workspaces their token reaches (GET /developers/me, which the API
 * family's command line tool reads after signing in). A client's token has no developer: 403.
 */
export async function currentDeveloper(
  deps: WorkspaceDeps & { developers: DeveloperRepository },
  caller: Principal,
): Promise<{ developer: Developer; workspaces: Workspace[] }> {
  const developer = await deps.developers.findById(requireDeveloper(caller).developerId);
  if (!developer) throw new UnauthenticatedError('invalid_token', 'The developer of this token no longer exists');
  return { developer, workspaces: await listWorkspaces(deps, caller) };
}
