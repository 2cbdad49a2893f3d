import { pino, type Logger } from 'pino';
import { JwtAccessTokens, JwtTokenVerifier, KeySet, maxSignedTokenSeconds, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import { systemClock, type Repositories } from '@platform/domain';
import { createHttpApp, serve, type Serving } from '@platform/http';
import { tokenServiceApiInfo, tokenServiceRoutes, type TokenServiceScope, type TokenServices } from '@platform/token-service';
import { type MikroORM, MikroSigningKeyRepository, openOrm, openRepositories, pingControlPlane, SqlGrantStore, SqlSignInFailureStore, watchedClientLookup } from '@platform/persistence';
import type { OAuthConfig } from './config.js';

export type RunningTokenService = Serving;

/**
 * The token service: owns the signing key set (creating the first key), publishes it as JWKS
 * with RFC 8414 metadata, signs developers in, and answers the authorization_code (PKCE),
 * refresh_token and client_credentials grants, revocation and introspection.
 */
export async function startTokenService(config: OAuthConfig, options: { logger?: Logger } = {}): Promise<RunningTokenService> {
  const logger = options.logger ?? pino({ name: 'oauth', level: config.logLevel });

  // The control plane, and the key set this service signs with: private halves sealed (plain ones
  // from an older release sealed here), its first key made here, the key in use opened before listening.
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 8, connectTimeoutMs: config.postgres.connectTimeoutMs });
  const keys = new KeySet({
    repository: new MikroSigningKeyRepository(orm.em.fork()),
    clock: systemClock,
    sealer: config.signingKeySecrets,
    log: logger,
    refreshSeconds: 30,
  });
  try {
    await keys.prepareForSigning({ maxTokenSeconds: maxSignedTokenSeconds(config.developerTokenTtlSeconds) });
  } catch (error) {
    await orm.close();
    throw error;
  }
  const clients = await watchedClientLookup(orm, {
    databaseUrl: config.databaseUrl,
    ttlMs: config.clientCacheMs,
    onLost: (error) => logger.warn({ err: error }, 'client-change listener lost its connection; reconnecting'),
  });

  // The ports every request shares; each request adds repositories over its own unit of work.
  const { hasher, throttle } = passwordSignIn(config, new SqlSignInFailureStore(orm), systemClock);
  const grants = new SqlGrantStore(orm);
  const services: TokenServices = {
    clients: clients.lookup,
    secrets: new Sha256ClientSecrets(),
    grants,
    tokens: new JwtAccessTokens(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock, ttlSeconds: config.developerTokenTtlSeconds }),
    hasher,
    throttle,
    settings: { clock: systemClock, codeTtlSeconds: config.codeTtlSeconds, refreshTtlSeconds: config.refreshTokenTtlSeconds, issuer: config.oauth.issuer },
    keys,
    controlPlaneReady: () => pingControlPlane(orm, config.postgres.readinessTimeoutMs),
  };

  const app = createHttpApp<TokenServiceScope>({
    routes: tokenServiceRoutes,
    logger,
    // No operation of the token service takes a bearer token: clients authenticate in the form.
    tokenVerifier: new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock }),
    validateResponses: config.validateResponses,
    openScope: () => requestScope(services, orm),
    openapi: tokenServiceApiInfo({ buildHash: config.buildHash, issuer: config.oauth.issuer }),
    trustedProxies: config.trustedProxies,
    deadlineMs: config.postgres.requestDeadlineMs,
  });
  const purging = purgeExpiredGrants(grants, logger);

  const serving = await serve(app, { host: config.oauth.host, port: config.oauth.port, limits: config.http, tls: config.oauth.tls });
  logger.info({ url: serving.url }, 'token service listening');

  // In the reverse order of opening: no request outlives what it uses.
  const shutDown = async () => {
    clearInterval(purging);
    await serving.close();
    await clients.stop();
    await orm.close();
  };
  let stopping: Promise<void> | undefined;
  return { url: serving.url, server: serving.server, close: () => (stopping ??= shutDown()) };
}

/** A request's scope: the shared ports, and repositories over a unit of work opened when a route first needs one. */
function requestScope(services: TokenServices, orm: MikroORM): TokenServiceScope {
  let unit: Repositories | undefined;
  const repositories = () => (unit ??= openRepositories(orm));
  return {
    ...services,
    get developers() {
      return repositories().developers;
    },
    get workspaces() {
      return repositories().workspaces;
    },
  };
}

/** Expired codes and dead token families go every ten minutes (each replica; the deletes are idempotent). */
function purgeExpiredGrants(grants: SqlGrantStore, logger: Logger): NodeJS.Timeout {
  const timer = setInterval(() => {
    grants.purge(systemClock.now()).then(
      (purged) => logger.debug(purged, 'purged expired grants'),
      (error: unknown) => logger.warn({ err: error }, 'purging expired grants failed'),
    );
  }, 600_000);
  timer.unref();
  return timer;
}
