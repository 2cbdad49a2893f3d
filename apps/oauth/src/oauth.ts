import { pino, type Logger } from 'pino';
import type { PlatformConfig } from '@platform/config';
import { JwtTokenVerifier, KeySet, Sha256ClientSecrets, issueClientToken } from '@platform/auth';
import { clientCredentialsGrant, systemClock } from '@platform/domain';
import { createHttpApp, serve, tokenServiceRoutes, type Serving, type TokenServiceScope } from '@platform/http';
import { MikroSigningKeyRepository, openOrm, openRepositories, pingControlPlane } from '@platform/persistence';

export type RunningTokenService = Serving;

/**
 * The token service: owns the signing key set (creating the first key), publishes it as JWKS
 * with RFC 8414 metadata, and answers the client_credentials grant. More grants are to come.
 */
export async function startTokenService(config: PlatformConfig, options: { logger?: Logger } = {}): Promise<RunningTokenService> {
  const logger = options.logger ?? pino({ name: 'oauth', level: config.logLevel });
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 4 });
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, refreshSeconds: 30 });
  await keys.ensureSigningKey();
  const secrets = new Sha256ClientSecrets();
  const app = createHttpApp<TokenServiceScope>({
    routes: tokenServiceRoutes,
    logger,
    // No operation of the token service takes a bearer token yet.
    tokenVerifier: new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock }),
    openScope: () => ({
      issuer: config.oauth.issuer,
      jwks: () => keys.publicJwks(),
      controlPlaneReady: () => pingControlPlane(orm),
      clientCredentials: async ({ clientId, clientSecret, scope }) => {
        const { client, scopes } = await clientCredentialsGrant(
          { clients: openRepositories(orm).clients, secrets },
          { clientId, clientSecret },
          scope,
        );
        const issued = await issueClientToken(
          keys,
          { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock },
          { clientId: client.id, workspaceId: client.workspaceId, scopes, ttlSeconds: config.developerTokenTtlSeconds },
        );
        return { accessToken: issued.token, expiresIn: issued.expiresIn, scopes };
      },
    }),
    openapi: {
      title: 'Multi-tenant PostgreSQL platform token service',
      version: `0.1.0-${config.buildHash}`,
      servers: [{ url: config.oauth.issuer, description: 'token service' }],
    },
  });
  const serving = await serve(app, { host: config.oauth.host, port: config.oauth.port });
  logger.info({ url: serving.url }, 'token service listening');
  let closing: Promise<void> | null = null;
  return {
    url: serving.url,
    server: serving.server,
    close: () =>
      (closing ??= (async () => {
        await serving.close();
        await orm.close();
      })()),
  };
}
