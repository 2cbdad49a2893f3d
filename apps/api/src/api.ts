import { pino, type Logger } from 'pino';
import { JwtTokenVerifier, JwtUserTokenIssuer, KeySet, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import { systemClock } from '@platform/domain';
import { createHttpApp, serve, type Serving } from '@platform/http';
import { managementRoutes, type ManagementScope } from '@platform/management-api';
import { databaseUrl } from '@platform/config';
import { DataPlanePools, PgDataPlane } from '@platform/data-plane';
import {
  CachedDatabaseLocator,
  PolledRevocationList,
  MikroProvisioningStore,
  MikroSigningKeyRepository,
  openOrm,
  openRepositories,
  pingControlPlane,
} from '@platform/persistence';
import { PgClusterDirectory, Reconciler } from '@platform/provisioner';
import type { ApiConfig } from './config.js';

/** `close` stops taking requests, lets in-flight ones finish, stops the provisioner, closes pools. */
export type RunningApi = Serving;

/** Opens the control plane, builds the management API, starts the provisioner and listens. */
export async function startApi(config: ApiConfig, options: { logger?: Logger } = {}): Promise<RunningApi> {
  const logger = options.logger ?? pino({ name: 'api', level: config.logLevel });
  const orm = await openOrm({ databaseUrl: config.databaseUrl });
  const clusters = new PgClusterDirectory(config.regions, config.clusterUrls);
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock });
  // Developer tokens of a revoked refresh-token family stop working within one poll.
  const revocations = new PolledRevocationList(orm, {
    pollMs: config.revocationPollMs,
    retainSeconds: config.developerTokenTtlSeconds + 60,
    onError: (error) => logger.warn({ err: error }, 'reading revoked token families failed; retrying'),
  });
  await revocations.start();
  const tokenVerifier = new JwtTokenVerifier(keys, {
    issuer: config.oauth.issuer,
    audience: config.api.publicBaseUrl,
    userAudience: config.api.publicApiUrl,
    clock: systemClock,
    revocations,
  });
  const userTokens = new JwtUserTokenIssuer(keys, { issuer: config.oauth.issuer, audience: config.api.publicApiUrl, clock: systemClock });
  const pools = new DataPlanePools({ maxPools: config.dataPlane.maxPools, connectionsPerDatabase: config.dataPlane.connectionsPerDatabase });
  const dataPlane = new PgDataPlane(pools, (database) => databaseUrl(config.clusterUrls[database.region], database.physicalName));
  const locator = new CachedDatabaseLocator(orm, { ttlMs: config.databaseCacheMs });
  const { hasher, throttle } = passwordSignIn(config, systemClock);
  const secrets = new Sha256ClientSecrets();
  const secureCookie = new URL(config.api.publicApiUrl).protocol === 'https:';
  const sessions = {
    ttlSeconds: config.sessionTtlSeconds,
    cookieName: secureCookie ? '__Secure-auth.session-token' : 'auth.session-token',
    secureCookie,
  };
  const reconciler = new Reconciler({
    store: new MikroProvisioningStore(orm, systemClock),
    clusters,
    intervalMs: config.reconcileIntervalMs,
    log: logger.child({ component: 'provisioner' }),
    faultPoint: config.faultPoint ? faultInjector(config.faultPoint, logger) : undefined,
  });

  const app = createHttpApp<ManagementScope>({
    routes: managementRoutes,
    logger,
    tokenVerifier,
    validateResponses: config.validateResponses,
    allowedOrigins: config.allowedOrigins,
    sessionCookieName: sessions.cookieName,
    openScope: () => ({
      get repos() {
        const repos = openRepositories(orm);
        Object.defineProperty(this, 'repos', { value: repos });
        return repos;
      },
      clusters,
      provisioner: reconciler,
      locator,
      dataPlane,
      hasher,
      userTokens,
      throttle,
      secrets,
      sessions,
      publicApiUrl: config.api.publicApiUrl,
      controlPlaneReady: () => pingControlPlane(orm),
    }),
    openapi: {
      title: 'Multi-tenant PostgreSQL platform API',
      version: `0.1.0-${config.buildHash}`,
      description: 'Workspaces and databases. Errors are APIError {errorCode, message, statusCode}.',
      servers: [
        { url: config.api.publicBaseUrl, description: '{base_url}' },
        ...(config.api.publicApiUrl !== config.api.publicBaseUrl ? [{ url: config.api.publicApiUrl, description: '{api_url}' }] : []),
      ],
    },
  });

  const serving = await serve(app, { host: config.api.host, port: config.api.port });
  reconciler.start();
  logger.info({ url: serving.url }, 'api listening');

  let closing: Promise<void> | null = null;
  return {
    url: serving.url,
    server: serving.server,
    close: () =>
      (closing ??= (async () => {
        await serving.close();
        revocations.stop();
        await reconciler.stop();
        await clusters.close();
        await pools.close();
        await orm.close();
        logger.info('api stopped');
      })()),
  };
}

/** PLATFORM_FAULT_POINT=<step>: the process kills itself at that provisioning step (tests of recovery). */
function faultInjector(point: string, logger: Logger) {
  return (step: string) => {
    if (step !== point) return;
    logger.warn({ step }, 'fault point reached: killing the process');
    process.kill(process.pid, 'SIGKILL');
  };
}
