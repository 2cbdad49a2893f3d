import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { JwtTokenVerifier, JwtUserTokenIssuer, KeySet, maxSignedTokenSeconds, OpenIdRelyingParty, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import { ConnectionBudget, PgDataPlane, serviceUrl } from '@platform/data-plane';
import { systemClock } from '@platform/domain';
import { createHttpApp, serve, type Serving } from '@platform/http';
import { managementApiInfo, managementRoutes, sessionCookieFor, type ManagementServices } from '@platform/management-api';
import { AdvisoryLeader, CachedDatabaseLocator, MikroProvisioningStore, SqlComputeInstances, SqlComputeStore, MikroSigningKeyRepository, openOrm, openRepositories, pingControlPlane, PolledRevocationList, SqlInsightsRetention, SqlObserverStore, SqlQueryMinutes, SqlSignInFailureStore, SqlSsoLoginStates, SqlSsoRegistrations } from '@platform/persistence';
import { ComputeReconciler, DatabaseMover, DiskSpaceProbe, LocalComputeDriver, ObserverSampler, PgClusterDirectory, DatabaseReconciler } from '@platform/provisioner';
import type { ApiConfig } from './config.js';
import { faultInjector } from './fault-point.js';
import { startInsightsHousekeeping } from './insights-housekeeping.js';
import { resealSsoSecrets } from './sso-key-rotation.js';
import { tokenEndpoint, type ApiScope } from './token-endpoint.js';

/** The control-plane advisory lock of the replica that samples the database servers (any fixed number). */
const OBSERVER_LOCK_KEY = 7_230_001;

/** `close` stops taking requests, lets in-flight ones finish, stops the provisioner, closes connections. */
export type RunningApi = Serving;

/** Opens the control plane, builds the management API, starts the provisioner and listens. */
export async function startApi(config: ApiConfig, options: { logger?: Logger } = {}): Promise<RunningApi> {
  const logger = options.logger ?? pino({ name: 'api', level: config.logLevel });

  // The control plane and the clusters that hold the databases.
  const orm = await openOrm({ databaseUrl: config.databaseUrl, connectTimeoutMs: config.postgres.connectTimeoutMs });
  // Dedicated compute: local PostgreSQL servers; a database on one is reached there.
  const computeDriver = new LocalComputeDriver({ dir: config.compute.dir });
  const clusters = new PgClusterDirectory(
    config.regions,
    config.clusterUrls,
    (instanceId) => computeDriver.adminUrl(instanceId),
    config.databaseLimits,
    (repair) => logger.error({ role: repair.role, removed: repair.removed }, 'a role made for a customer held what it may not; revoked'),
    config.postgres.connectTimeoutMs,
  );
  // Defence in depth: no role made for customers keeps a power over the cluster, whoever gave it.
  // A cluster that does not answer now is audited at its databases' next repair instead.
  await clusters.auditCustomerRoles().catch((error) => logger.warn({ err: error }, 'auditing customer roles failed; the next schema repair audits them'));
  const connections = new ConnectionBudget(config.dataPlane);

  // Tokens: verified against the token service's keys; developer tokens of a revoked refresh-token
  // family stop working within one poll. This API signs too (user tokens, its token endpoint): its
  // private halves are sealed (plain ones from an older release sealed here), a fresh
  // installation's first key made, and the key in use opened before it listens.
  const keys = new KeySet({
    repository: new MikroSigningKeyRepository(orm.em.fork()),
    clock: systemClock,
    sealer: config.signingKeySecrets,
    log: logger,
  });
  try {
    await keys.prepareForSigning({ maxTokenSeconds: maxSignedTokenSeconds(config.developerTokenTtlSeconds) });
  } catch (error) {
    await orm.close();
    throw error;
  }
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

  // The provisioner moves databases from REQUESTED to READY and drops deleted ones.
  const reconciler = new DatabaseReconciler({
    store: new MikroProvisioningStore(orm, systemClock),
    clusters,
    intervalMs: config.reconcileIntervalMs,
    log: logger.child({ component: 'provisioner' }),
    faultPoint: config.faultPoint ? faultInjector(config.faultPoint, logger) : undefined,
  });

  const computeReconciler = new ComputeReconciler({
    store: new SqlComputeStore(orm, systemClock),
    driver: computeDriver,
    mover: new DatabaseMover(
      { pgDump: join(config.compute.clientBin, 'pg_dump'), pgRestore: join(config.compute.clientBin, 'pg_restore') },
      config.databaseLimits.maxConnections,
    ),
    clusters,
    clusterAdminUrl: (region) => config.clusterUrls[region],
    intervalMs: config.compute.intervalMs,
    // Longer than any replica keeps a database's location (the locator's cache).
    dropGraceMs: config.databaseCacheMs + 5_000,
    log: logger.child({ component: 'compute' }),
    faultPoint: config.faultPoint ? faultInjector(config.faultPoint, logger) : undefined,
  });

  // The disks of the control plane's server and of the served regions' clusters, for /readyz.
  const disks = new DiskSpaceProbe(
    [{ name: 'control plane', url: config.databaseUrl }, ...config.regions.map((region) => ({ name: region, url: config.clusterUrls[region] }))],
    {
      warningPercent: config.diskFreeWarningPercent,
      timeoutMs: config.postgres.readinessTimeoutMs,
      onChange: (disk) =>
        disk.low
          ? logger.warn({ servers: disk.servers, freeBytes: disk.freeBytes, totalBytes: disk.totalBytes }, 'free disk space of a PostgreSQL server is under the warning threshold')
          : logger.info({ servers: disk.servers, freeBytes: disk.freeBytes }, 'free disk space of a PostgreSQL server is above the warning threshold again'),
    },
  );

  // The ports every request shares; each request adds repositories over its own unit of work.
  const { hasher, throttle } = passwordSignIn(config, new SqlSignInFailureStore(orm), systemClock);
  const sessionCookie = sessionCookieFor(config.api.publicApiUrl);
  const ssoRegistrations = new SqlSsoRegistrations(orm);
  if (config.ssoSecrets) await resealSsoSecrets(ssoRegistrations, config.ssoSecrets, logger);
  const services: ManagementServices = {
    clusters,
    // Credentials are login roles on the clusters: the same directory creates and drops them.
    loginRoles: clusters,
    credentialsPerDatabase: config.credentialsPerDatabase,
    provisioner: reconciler,
    locator: new CachedDatabaseLocator(orm, { ttlMs: config.databaseCacheMs }),
    // Each database is reached as its own service role, never as the cluster's superuser; a database
    // built before that role existed gets it (built-in schema step 5) at its first refused login.
    dataPlane: new PgDataPlane(
      connections,
      (database) => serviceUrl(config.clusterUrls[database.region], database.physicalName, database.server),
      (database) => clusters.forDatabase(database).upgradeBuiltInSchema(database.physicalName),
    ),
    hasher,
    throttle,
    tokens: new JwtUserTokenIssuer(keys, { issuer: config.oauth.issuer, audience: config.api.publicApiUrl, clock: systemClock }),
    sessionTtlSeconds: config.sessionTtlSeconds,
    membersCreateUsers: config.membersCreateUsers,
    sessionCookie,
    secrets: new Sha256ClientSecrets(),
    publicApiUrl: config.api.publicApiUrl,
    publicBaseUrl: config.api.publicBaseUrl,
    ssoRegistrations,
    ssoSecrets: config.ssoSecrets,
    loginStates: new SqlSsoLoginStates(orm),
    relyingParty: new OpenIdRelyingParty({ allowLoopbackHttp: config.ssoAllowLoopbackHttp }),
    gatewayUrl: config.gateway.publicUrl,
    controlPlaneReady: () => pingControlPlane(orm, config.postgres.readinessTimeoutMs),
    diskSpace: () => disks.report(),
    insights: new SqlQueryMinutes(orm),
    insightsRetention: config.insightsRetention,
    clock: systemClock,
    computeInstances: new SqlComputeInstances(orm),
    computeCatalog: config.compute.types,
    computeProvisioner: computeReconciler,
  };

  const tokens = await tokenEndpoint(orm, config, keys, { hasher, throttle }, logger);
  const app = createHttpApp<ApiScope>({
    routes: [...managementRoutes, tokens.route],
    logger,
    tokenVerifier,
    validateResponses: config.validateResponses,
    allowedOrigins: config.allowedOrigins,
    sessionCookieName: sessionCookie.name,
    openScope: () => {
      const repositories = openRepositories(orm);
      return { ...services, ...repositories, tokenService: tokens.scopeFor(repositories) };
    },
    openapi: managementApiInfo({ buildHash: config.buildHash, publicBaseUrl: config.api.publicBaseUrl, publicApiUrl: config.api.publicApiUrl }),
    trustedProxies: config.trustedProxies,
    deadlineMs: config.postgres.requestDeadlineMs,
  });

  // The database servers' own view for insights: one replica samples, the one holding the lock.
  const observerLock = new AdvisoryLeader(config.databaseUrl, OBSERVER_LOCK_KEY);
  const observer = new ObserverSampler({
    clusters,
    store: new SqlObserverStore(orm),
    intervalMs: config.insightsSampleMs,
    isLeader: () => observerLock.isLeader(),
    log: logger.child({ component: 'observer' }),
  });

  const serving = await serve(app, { host: config.api.host, port: config.api.port, limits: config.http, tls: config.api.tls });
  reconciler.start();
  computeReconciler.start();
  // A changed limit reaches databases and credentials made before; a failure leaves them as they were.
  clusters.applyLimits().then(
    (changed) => logger.info(changed, 'database and credential limits applied'),
    (error: unknown) => logger.warn({ err: error }, 'applying database and credential limits failed; the next start tries again'),
  );
  observer.start();
  const housekeeping = startInsightsHousekeeping({
    retention: new SqlInsightsRetention(orm),
    keep: config.insightsRetention,
    isLeader: () => observerLock.isLeader(),
    everyMs: 10 * 60_000,
    log: logger.child({ component: 'insights-housekeeping' }),
  });
  logger.info({ url: serving.url }, 'api listening');

  // In the reverse order of opening: no request or provisioning step outlives what it uses.
  const shutDown = async () => {
    await serving.close();
    revocations.stop();
    await tokens.stop();
    await reconciler.stop();
    await computeReconciler.stop();
    await computeDriver.close();
    await observer.stop();
    await housekeeping.stop();
    await observerLock.close();
    await clusters.close();
    await connections.close();
    await orm.close();
    logger.info('api stopped');
  };
  let stopping: Promise<void> | undefined;
  return { url: serving.url, server: serving.server, close: () => (stopping ??= shutDown()) };
}
