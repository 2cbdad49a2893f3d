import type { Logger } from 'pino';
import { JwtAccessTokens, Sha256ClientSecrets, type KeySet } from '@platform/auth';
import { systemClock, type LoginThrottle, type PasswordHashing, type Repositories } from '@platform/domain';
import { withScope } from '@platform/http';
import type { ManagementScope } from '@platform/management-api';
import { pingControlPlane, SqlGrantStore, watchedClientLookup, type MikroORM } from '@platform/persistence';
import { revokeRoute, tokenRoute, type TokenServiceScope, type TokenServices } from '@platform/token-service';
import type { ApiConfig } from './config.js';

/** The management API's scope, and the token service's for the one route of it served here. */
export type ApiScope = ManagementScope & { tokenService: TokenServiceScope };

/**
 * POST /oauth2/token at {base_url}, where the SPEC puts it (and POST /oauth2/revoke beside it): the token service's own route over the
 * same control plane, key set and settings, so it answers exactly as apps/oauth does (same grants,
 * errors and tokens; a code issued by one is redeemed at either). The key set is prepared (a first
 * key made on a fresh installation) before this is called.
 */
export async function tokenEndpoint(orm: MikroORM, config: ApiConfig, keys: KeySet, signIn: { hasher: PasswordHashing; throttle: LoginThrottle }, logger: Logger) {
  const clients = await watchedClientLookup(orm, {
    databaseUrl: config.databaseUrl,
    ttlMs: config.clientCacheMs,
    onLost: (error) => logger.warn({ err: error }, 'client-change listener lost its connection; reconnecting'),
  });
  const services: TokenServices = {
    clients: clients.lookup,
    secrets: new Sha256ClientSecrets(),
    grants: new SqlGrantStore(orm),
    tokens: new JwtAccessTokens(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock, ttlSeconds: config.developerTokenTtlSeconds }),
    ...signIn,
    settings: { clock: systemClock, codeTtlSeconds: config.codeTtlSeconds, refreshTtlSeconds: config.refreshTokenTtlSeconds, issuer: config.oauth.issuer },
    keys,
    controlPlaneReady: () => pingControlPlane(orm),
  };
  return {
    route: withScope(tokenRoute, (scope: ApiScope) => scope.tokenService),
    /** POST /oauth2/revoke beside it: the web console, a page of this origin, ends its refresh token family on sign-out. */
    revokeRoute: withScope(revokeRoute, (scope: ApiScope) => scope.tokenService),
    /** The token service's scope over a request's repositories. */
    scopeFor: (repositories: Repositories): TokenServiceScope => ({ ...services, developers: repositories.developers, workspaces: repositories.workspaces }),
    stop: () => clients.stop(),
  };
}
