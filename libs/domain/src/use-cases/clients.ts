import { requireDeveloper } from '../authorization.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { OAuthClient, OAuthClientType, Principal } from '../model.js';
import type { OAuthClientRepository, WorkspaceRepository } from '../ports.js';
import { getWorkspace, requireWorkspaceOwner } from './workspaces.js';

export interface ClientDeps {
  workspaces: WorkspaceRepository;
  clients: OAuthClientRepository;
  secrets: ClientSecrets;
}

/** High-entropy client secrets, stored as digests (a slow password hash is for passwords). */
export interface ClientSecrets {
  /** A new client's id, following the domain's rule (`newClientId`). */
  newClientId(): string;
  generate(): { secret: string; digest: string };
  /** Constant-time comparison of a presented secret with a stored digest. */
  matches(secret: string, digest: string): boolean;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Redirect URIs are exact (no wildcards). Public clients (command-line tools) may only use
 * loopback http (RFC 8252 section 7.3); confidential ones https, or loopback http for development.
 */
export function assertRedirectUris(type: OAuthClientType, uris: string[]): void {
  for (const uri of uris) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new ValidationError('invalid_redirect_uri', `'${uri}' is not an absolute URL`);
    }
    if (url.hash) throw new ValidationError('invalid_redirect_uri', `'${uri}' must not have a fragment`);
    const loopback = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname === '::1' ? '[::1]' : url.hostname);
    if (type === 'public' && !loopback) {
      throw new ValidationError('invalid_redirect_uri', `A public client's redirect URIs must be loopback http URLs; '${uri}' is not`);
    }
    if (type === 'confidential' && !loopback && url.protocol !== 'https:') {
      throw new ValidationError('invalid_redirect_uri', `'${uri}' must use https (or be a loopback http URL)`);
    }
  }
}

/**
 * Registers a client; a confidential one's secret is returned here and never again. Registering,
 * replacing a secret and deleting are for the workspace's owners: a client acts for the whole
 * workspace. Any member may list them.
 */
export async function registerClient(
  deps: ClientDeps,
  caller: Principal,
  workspaceSlug: string,
  input: { name: string; type: OAuthClientType; redirectUris: string[] },
): Promise<{ client: OAuthClient; secret: string | null }> {
  const developer = requireDeveloper(caller);
  assertRedirectUris(input.type, input.redirectUris);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  await requireWorkspaceOwner(deps, developer, workspace, 'register clients');
  const generated = input.type === 'confidential' ? deps.secrets.generate() : null;
  const client = await deps.clients.create({
    id: deps.secrets.newClientId(),
    workspaceId: workspace.id,
    name: input.name.trim(),
    type: input.type,
    secretDigest: generated?.digest ?? null,
    redirectUris: [...new Set(input.redirectUris)],
    createdBy: developer.developerId,
  });
  return { client, secret: generated?.secret ?? null };
}

export async function listClients(deps: ClientDeps, caller: Principal, workspaceSlug: string): Promise<OAuthClient[]> {
  requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  return deps.clients.listForWorkspace(workspace.id);
}

function clientNotFound(id: string): NotFoundError {
  return new NotFoundError('client_not_found', `Client '${id}' not found`);
}

/** A new secret replaces the old one at once. */
export async function rotateClientSecret(
  deps: ClientDeps,
  caller: Principal,
  workspaceSlug: string,
  clientId: string,
): Promise<{ client: OAuthClient; secret: string }> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  await requireWorkspaceOwner(deps, developer, workspace, 'replace a client’s secret');
  const client = await deps.clients.find(workspace.id, clientId);
  if (!client) throw clientNotFound(clientId);
  if (client.type !== 'confidential') throw new ValidationError('public_client', 'A public client has no secret');
  const { secret, digest } = deps.secrets.generate();
  if (!(await deps.clients.setSecretDigest(workspace.id, clientId, digest))) throw clientNotFound(clientId);
  return { client, secret };
}

export async function deleteClient(deps: ClientDeps, caller: Principal, workspaceSlug: string, clientId: string): Promise<void> {
  const developer = requireDeveloper(caller);
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  await requireWorkspaceOwner(deps, developer, workspace, 'delete clients');
  if (!(await deps.clients.delete(workspace.id, clientId))) throw clientNotFound(clientId);
}
