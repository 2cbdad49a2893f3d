import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { PlatformConfig } from '@platform/config';
import { JwtTokenVerifier, KeySet } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { createHttpApp, tokenServiceRoutes, type TokenServiceScope } from '@platform/http';
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
  const server = createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.oauth.port, config.oauth.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.address}:${address.port}`;
  logger.info({ url }, 'token service listening');
  let closing: Promise<void> | null = null;
  return {
    url,
    server,
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), 10_000);
        await closed;
        clearTimeout(timer);
        await orm.close();
      })()),
  };
}
