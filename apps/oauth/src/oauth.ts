import { pino, type Logger } from 'pino';
import { JwtAccessTokens, JwtTokenVerifier, KeySet, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import {
  authenticateClient,
  authenticateDeveloper,
  checkAuthorizationRequest,
  clientCredentialsTokens,
  exchangeAuthorizationCode,
  introspectToken,
  issueAuthorizationCode,
  refreshTokens,
  revokeToken,
  signUpDeveloper,
  systemClock,
  type GrantDeps,
} from '@platform/domain';
import { createHttpApp, serve, type Serving } from '@platform/http';
import { tokenServiceRoutes, type TokenServiceScope } from '@platform/token-service';
import {
  CachedClientLookup,
  ClientChangeListener,
  SqlGrantStore,
  MikroSigningKeyRepository,
  openOrm,
  openRepositories,
  pingControlPlane,
} from '@platform/persistence';
import type { OAuthConfig } from './config.js';

export type RunningTokenService = Serving;

/** Client ids are `cli_` plus 16 characters, or a first-party name; anything else is no client. */
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The token service: owns the signing key set (creating the first key), publishes it as JWKS
 * with RFC 8414 metadata, signs developers in, and answers the authorization_code (PKCE),
 * refresh_token and client_credentials grants, revocation and introspection.
 */
export async function startTokenService(config: OAuthConfig, options: { logger?: Logger } = {}): Promise<RunningTokenService> {
  const logger = options.logger ?? pino({ name: 'oauth', level: config.logLevel });
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 8 });
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, refreshSeconds: 30 });
  await keys.ensureSigningKey();
  const secrets = new Sha256ClientSecrets();
  // Clients are read once per OAUTH_CLIENT_CACHE_MS, not per token request; a change committed
  // anywhere (a new secret, a deletion) reaches this cache at once through the listener, and
  // while the listener is down the TTL bounds how stale it can be.
  const clientLookup = new CachedClientLookup((id) => openRepositories(orm).clients.findForAuthentication(id), { ttlMs: config.clientCacheMs });
  const clients = { findForAuthentication: (id: string) => (CLIENT_ID.test(id) ? clientLookup.find(id) : Promise.resolve(null)) };
  const clientChanges = new ClientChangeListener(config.databaseUrl, {
    changed: (id) => clientLookup.forget(id),
    lost: (error) => {
      clientLookup.clear();
      logger.warn({ err: error }, 'client-change listener lost its connection; reconnecting');
    },
  });
  await clientChanges.start();
  const { hasher, throttle } = passwordSignIn(config, systemClock);
  const tokens = new JwtAccessTokens(keys, {
    issuer: config.oauth.issuer,
    audience: config.api.publicBaseUrl,
    clock: systemClock,
    ttlSeconds: config.developerTokenTtlSeconds,
  });
  const grants = new SqlGrantStore(orm);
  const settings = {
    clock: systemClock,
    codeTtlSeconds: config.codeTtlSeconds,
    refreshTtlSeconds: config.refreshTokenTtlSeconds,
    issuer: config.oauth.issuer,
  };
  /** Dependencies over a fresh unit of work: one per request. */
  const deps = (): GrantDeps => {
    const repos = openRepositories(orm);
    return { clients: repos.clients, developers: repos.developers, workspaces: repos.workspaces, secrets, grants, tokens, settings };
  };
  const scope: TokenServiceScope = {
    issuer: config.oauth.issuer,
    jwks: () => keys.publicJwks(),
    controlPlaneReady: () => pingControlPlane(orm),
    authenticateClient: (credentials) => authenticateClient({ clients, secrets }, credentials),
    clientCredentials: (client, requested) => clientCredentialsTokens({ tokens }, client, requested),
    authorizationCode: (client, input) => exchangeAuthorizationCode(deps(), client, input),
    refresh: (client, input) => refreshTokens(deps(), client, input),
    revoke: (client, token, hint) => revokeToken({ grants, tokens }, client, token, hint),
    introspect: (client, token) => introspectToken({ grants, tokens, settings }, client, token),
    checkAuthorization: (params) => checkAuthorizationRequest({ clients, settings }, params),
    signInAndAuthorize: async (request, credentials, clientAddress) => {
      const unit = deps();
      const developer = await authenticateDeveloper({ developers: unit.developers, hasher, throttle }, credentials, clientAddress);
      return issueAuthorizationCode(unit, request, developer);
    },
    signUp: async (input, clientAddress) => {
      await signUpDeveloper({ developers: openRepositories(orm).developers, hasher, throttle }, input, clientAddress);
    },
  };
  const app = createHttpApp<TokenServiceScope>({
    routes: tokenServiceRoutes,
    logger,
    // No operation of the token service takes a bearer token: clients authenticate in the form.
    tokenVerifier: new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock }),
    openScope: () => scope,
    openapi: {
      title: 'Multi-tenant PostgreSQL platform token service',
      version: `0.1.0-${config.buildHash}`,
      description:
        'OAuth 2.0 authorization server (RFC 6749, 7636, 8414, 7009, 7662, 9068) for the platform\'s management API. ' +
        'Errors of the OAuth endpoints are RFC 6749 `{error, error_description}`.',
      servers: [{ url: config.oauth.issuer, description: 'token service' }],
    },
  });
  // Expired codes and dead token families go every ten minutes (each replica; the deletes are idempotent).
  const purging = setInterval(() => {
    grants.purge(systemClock.now()).then(
      (purged) => logger.debug(purged, 'purged expired grants'),
      (error: unknown) => logger.warn({ err: error }, 'purging expired grants failed'),
    );
  }, 600_000);
  purging.unref();
  const serving = await serve(app, { host: config.oauth.host, port: config.oauth.port });
  logger.info({ url: serving.url }, 'token service listening');
  let closing: Promise<void> | null = null;
  return {
    url: serving.url,
    server: serving.server,
    close: () =>
      (closing ??= (async () => {
        clearInterval(purging);
        await serving.close();
        await clientChanges.stop();
        await orm.close();
      })()),
  };
}
