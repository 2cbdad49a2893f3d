import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { requireDeveloper, requireManagement } from '../authorization.js';
import type { Developer, Principal, Workspace } from '../model.js';
import type { DeveloperRepository, WorkspaceRepository } from '../ports.js';
import { assertWorkspaceSlug, slugFromName } from '../workspace-slug.js';

export interface WorkspaceDeps {
  workspaces: WorkspaceRepository;
}

const NAME_MAX_LENGTH = 100;

/**
 * Creates a workspace owned by the caller. An explicit slug that is taken is a conflict; a slug
 * derived from the name gets a random suffix instead, since the caller did not choose it.
 */
export async function createWorkspace(
  deps: WorkspaceDeps,
  caller: Principal,
  input: { name: string; slug?: string },
): Promise<Workspace> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > NAME_MAX_LENGTH) {
    throw new ValidationError('invalid_workspace_name', `Workspace name must be 1 to ${NAME_MAX_LENGTH} characters`);
  }
  if (input.slug !== undefined) {
    assertWorkspaceSlug(input.slug);
    return deps.workspaces.create({ name, slug: input.slug, ownerId: requireDeveloper(caller).developerId });
  }
  const base = slugFromName(name);
  for (let attempt = 0; ; attempt++) {
    const slug = attempt === 0 ? base : `${base}-${randomBytes(4).toString('hex').slice(0, 6)}`;
    try {
      return await deps.workspaces.create({ name, slug, ownerId: requireDeveloper(caller).developerId });
    } catch (error) {
      if (!(error instanceof ConflictError) || attempt >= 3) throw error;
    }
  }
}

export async function listWorkspaces(deps: WorkspaceDeps, caller: Principal): Promise<Workspace[]> {
  const manager = requireManagement(caller);
  if (manager.kind === 'client') {
    const own = await deps.workspaces.findById(manager.workspaceId);
    return own ? [own] : [];
  }
  return deps.workspaces.listForDeveloper(manager.developerId);
}

/** A workspace the caller does not belong to answers exactly like one that does not exist. */
export async function getWorkspace(deps: WorkspaceDeps, caller: Principal, slug: string): Promise<Workspace> {
  const manager = requireManagement(caller);
  const workspace =
    manager.kind === 'client'
      ? await deps.workspaces.findById(manager.workspaceId).then((own) => (own?.slug === slug ? own : null))
      : await deps.workspaces.findBySlugForDeveloper(slug, manager.developerId);
  if (!workspace) throw new NotFoundError('workspace_not_found', `Workspace '${slug}' not found`);
  return workspace;
}

/**
 * Makes sure a developer and a workspace of theirs exist: the first-run path of a local
 * installation, before the OAuth service signs developers up.
 */
export async function bootstrapDeveloper(
  deps: WorkspaceDeps & { developers: DeveloperRepository },
  input: { email: string; name: string | null; workspaceName: string; workspaceSlug: string },
): Promise<{ developer: Developer; workspace: Workspace }> {
  const developer = await deps.developers.ensure({ email: input.email, name: input.name });
  const caller: Principal = { kind: 'developer', developerId: developer.id, scopes: [] };
  const existing = await deps.workspaces.findBySlugForDeveloper(input.workspaceSlug, developer.id);
  const workspace =
    existing ?? (await createWorkspace(deps, caller, { name: input.workspaceName, slug: input.workspaceSlug }));
  return { developer, workspace };
}
