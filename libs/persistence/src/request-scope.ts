import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { withDeadline } from '@platform/deadline';
import type { Repositories } from '@platform/domain';
import { MikroCredentialRepository } from './repositories/credential.repository.js';
import { MikroDatabaseRepository } from './repositories/database.repository.js';
import { MikroDeveloperRepository } from './repositories/developer.repository.js';
import { SqlWorkspaceInvitations } from './repositories/invitation.repository.js';
import { MikroOAuthClientRepository } from './repositories/oauth-client.repository.js';
import { MikroWorkspaceRepository } from './repositories/workspace.repository.js';

/** Repositories over a fresh EntityManager fork (made on first use): call once per request, never share across requests. */
export function openRepositories(orm: MikroORM): Repositories {
  const em = lazyFork(orm);
  return {
    developers: new MikroDeveloperRepository(em),
    workspaces: new MikroWorkspaceRepository(em),
    invitations: new SqlWorkspaceInvitations(em),
    databases: new MikroDatabaseRepository(em),
    clients: new MikroOAuthClientRepository(em),
    credentials: new MikroCredentialRepository(em),
  };
}

/** True when the control plane answers a query within `timeoutMs` (readiness must answer, whatever the server does). */
export async function pingControlPlane(orm: MikroORM, timeoutMs = 2_000): Promise<boolean> {
  try {
    await withDeadline(timeoutMs, () => orm.em.fork().execute('select 1'));
    return true;
  } catch {
    return false;
  }
}

/**
 * The request's own unit of work, forked on first use: most requests of users (their tenants,
 * their members) never touch the control plane, and a fork per request cost 2-3% of the API's CPU
 * on the hot read (bench:hot-path profile). Methods are bound to the fork, so the repositories use
 * it as they would the fork itself.
 */
function lazyFork(orm: MikroORM): EntityManager {
  let forked: EntityManager | undefined;
  return new Proxy({} as EntityManager, {
    get(_target, property) {
      forked ??= orm.em.fork();
      const value = Reflect.get(forked, property, forked) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(forked) : value;
    },
  });
}
