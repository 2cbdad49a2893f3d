import { pino, type Logger } from 'pino';
import { JwtAccessTokens, JwtTokenVerifier, KeySet, maxSignedTokenSeconds, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import { systemClock, type Repositories } from '@platform/domain';
import { createHttpApp, serve, type Serving } from '@platform/http';
import { tokenServiceApiInfo, tokenServiceRoutes, type TokenServiceScope, type TokenServices } from '@platform/token-service';
import { closeOrm, grantPurge, type MikroORM, MikroSigningKeyRepository, openOrm, openRepositories, pingControlPlane, SqlGrantStore, SqlSignInFailureStore, watchedClientLookup } from '@platform/persistence';
import { startWithClosers } from '@platform/process';
import type { OAuthConfig } from './config.js';

export type RunningTokenService = Serving;

const GRANT_PURGE_MS = 10 * 60_000;

/**
 * The token service: owns the signing key set (creating the first key), publishes it as JWKS
 * with RFC 8414 metadata, signs developers in, and answers the authorization_code (PKCE),
 * refresh_token and client_credentials grants, revocation and introspection.
 */
export async function startTokenService(config: OAuthConfig, options: { logger?: Logger } = {}): Promise<RunningTokenService> {
  const logger = options.logger ?? pino({ name: 'oauth', level: config.logLevel });
  return startWithClosers(logger, async (closers) => {
    const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 8, connectTimeoutMs: config.postgres.connectTimeoutMs });
    closers.push('control plane', () => closeOrm(orm, { log: logger }));
    const keys = await openSigningKeys(orm, config, logger);
    const clients = await watchedClientLookup(orm, {
      databaseUrl: config.databaseUrl,
      ttlMs: config.clientCacheMs,
      onLost: (error) => logger.warn({ err: error }, 'client-change listener lost its connection; reconnecting'),
    });
    closers.push('client-change listener', () => clients.stop());
    const grants = new SqlGrantStore(orm);
    const services = tokenServices(config, orm, keys, clients.lookup, grants);
    const purge = grantPurge(grants, { everyMs: GRANT_PURGE_MS, now: () => systemClock.now(), log: logger });
    purge.start();
    closers.push('grant purge', () => purge.stop());
    const serving = await serve(tokenServiceApp(config, { services, keys, orm, logger }), { host: config.oauth.host, port: config.oauth.port, limits: config.http, tls: config.oauth.tls });
    closers.push('http server', () => serving.close());
    logger.info({ url: serving.url }, 'token service listening');
    return { url: serving.url, server: serving.server, close: () => closers.close() };
  });
}

/**
 * The key set this service signs with: private halves sealed (plain ones from an older release
 * sealed here), its first key made here, the key in use opened before it listens.
 */
async function openSigningKeys(orm: MikroORM, config: OAuthConfig, logger: Logger): Promise<KeySet> {
  const keys = new KeySet({
    repository: new MikroSigningKeyRepository(orm.em.fork()),
    clock: systemClock,
    sealer: config.signingKeySecrets,
    log: logger,
    refreshSeconds: 30,
  });
  await keys.prepareForSigning({ maxTokenSeconds: maxSignedTokenSeconds(config.developerTokenTtlSeconds) });
  return keys;
}

/** The ports every request shares; each request adds repositories over its own unit of work. */
function tokenServices(config: OAuthConfig, orm: MikroORM, keys: KeySet, clients: TokenServices['clients'], grants: SqlGrantStore): TokenServices {
  const { hasher, throttle } = passwordSignIn(config, new SqlSignInFailureStore(orm), systemClock);
  return {
    clients,
    secrets: new Sha256ClientSecrets(),
    grants,
    tokens: new JwtAccessTokens(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock, ttlSeconds: config.developerTokenTtlSeconds }),
    hasher,
    throttle,
    settings: { clock: systemClock, codeTtlSeconds: config.codeTtlSeconds, refreshTtlSeconds: config.refreshTokenTtlSeconds, issuer: config.oauth.issuer },
    keys,
    controlPlaneReady: () => pingControlPlane(orm, config.postgres.readinessTimeoutMs),
  };
}

function tokenServiceApp(config: OAuthConfig, { services, keys, orm, logger }: { services: TokenServices; keys: KeySet; orm: MikroORM; logger: Logger }) {
  return createHttpApp<TokenServiceScope>({
    routes: tokenServiceRoutes,
    logger,
    // No operation of the token service takes a bearer token: clients authenticate in the form.
    tokenVerifier: new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock }),
    validateResponses: config.validateResponses,
    openScope: () => requestScope(services, orm),
    openapi: tokenServiceApiInfo({ buildHash: config.buildHash, issuer: config.oauth.issuer }),
    site: {
      links: [
        { rel: 'metadata', href: `${config.oauth.issuer.replace(/\/+$/, '')}/.well-known/oauth-authorization-server`, title: 'Authorization server metadata (RFC 8414)' },
        { rel: 'api', href: config.api.publicBaseUrl, title: 'The management API, whose tokens this service issues' },
      ],
    },
    trustedProxies: config.trustedProxies,
    deadlineMs: config.postgres.requestDeadlineMs,
  });
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
