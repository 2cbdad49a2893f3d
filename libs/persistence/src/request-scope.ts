import type { MikroORM } from '@mikro-orm/postgresql';
import type { Repositories } from '@platform/domain';
import { MikroCredentialRepository } from './repositories/credential.repository.js';
import { MikroDatabaseRepository } from './repositories/database.repository.js';
import { MikroDeveloperRepository } from './repositories/developer.repository.js';
import { SqlWorkspaceInvitations } from './repositories/invitation.repository.js';
import { MikroOAuthClientRepository } from './repositories/oauth-client.repository.js';
import { MikroWorkspaceRepository } from './repositories/workspace.repository.js';

/** Repositories over a fresh EntityManager fork: call once per request, never share across requests. */
export function openRepositories(orm: MikroORM): Repositories {
  const em = orm.em.fork();
  return {
    developers: new MikroDeveloperRepository(em),
    workspaces: new MikroWorkspaceRepository(em),
    invitations: new SqlWorkspaceInvitations(em),
    databases: new MikroDatabaseRepository(em),
    clients: new MikroOAuthClientRepository(em),
    credentials: new MikroCredentialRepository(em),
  };
}

/** True when the control plane answers a query. */
export async function pingControlPlane(orm: MikroORM): Promise<boolean> {
  try {
    await orm.em.fork().execute('select 1');
    return true;
  } catch {
    return false;
  }
}
