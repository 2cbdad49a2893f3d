import type { Server } from 'node:http';
import { pino, type Logger } from 'pino';
import type { PlatformConfig } from '@platform/config';
import { JwtTokenVerifier, KeySet } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { createHttpApp, serve, tokenServiceRoutes, type TokenServiceScope } from '@platform/http';
import { MikroSigningKeyRepository, openOrm, pingControlPlane } from '@platform/persistence';

export interface RunningTokenService {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * The token service. Today it owns the signing key set (creating the first key) and publishes
 * it as JWKS; the OAuth grants arrive with their own issue.
 */
export async function startTokenService(config: PlatformConfig, options: { logger?: Logger } = {}): Promise<RunningTokenService> {
  const logger = options.logger ?? pino({ name: 'oauth', level: config.logLevel });
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 4 });
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, refreshSeconds: 30 });
  await keys.ensureSigningKey();
  const app = createHttpApp<TokenServiceScope>({
    routes: tokenServiceRoutes,
    logger,
    // No operation of the token service takes a bearer token yet.
    tokenVerifier: new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock }),
    openScope: () => ({ jwks: () => keys.publicJwks(), controlPlaneReady: () => pingControlPlane(orm) }),
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
