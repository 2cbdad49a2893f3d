import type { MikroORM } from '@mikro-orm/postgresql';
import type { ClientLookup } from '@platform/domain';
import { openRepositories } from '../request-scope.js';
import { CachedClientLookup } from './cached-client-lookup.js';
import { ClientChangeListener } from './client-change-listener.js';

/**
 * Clients as a token endpoint looks them up: read once per `ttlMs`, not per token request; a change
 * committed anywhere (a new secret, a deletion) reaches the cache at once through the control
 * plane's notifications, and while the listener is down the TTL bounds how stale it can be.
 */
export async function watchedClientLookup(
  orm: MikroORM,
  options: { databaseUrl: string; ttlMs: number; onLost: (error: unknown) => void },
): Promise<{ lookup: ClientLookup; stop(): Promise<void> }> {
  const cache = new CachedClientLookup((id) => openRepositories(orm).clients.findForAuthentication(id), { ttlMs: options.ttlMs });
  const changes = new ClientChangeListener(options.databaseUrl, {
    changed: (id) => cache.forget(id),
    lost: (error) => {
      cache.clear();
      options.onLost(error);
    },
  });
  await changes.start();
  return { lookup: { findForAuthentication: (id) => cache.find(id) }, stop: () => changes.stop() };
}
