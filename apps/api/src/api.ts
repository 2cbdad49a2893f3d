import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { JwtTokenVerifier, JwtUserTokenIssuer, KeySet, maxSignedTokenSeconds, OpenIdRelyingParty, passwordSignIn, Sha256ClientSecrets } from '@platform/auth';
import { ConnectionBudget, PgDataPlane, serviceUrl } from '@platform/data-plane';
import { FAMILY_SSO_STATE_PURPOSE, systemClock, type TokenVerifier } from '@platform/domain';
import { createHttpApp, serve, type Route, type Serving } from '@platform/http';
import { managementApiInfo, managementRoutes, sessionCookieFor, type ManagementServices } from '@platform/management-api';
import { AdvisoryLeader, CachedDatabaseLocator, insightsHousekeeping, MikroProvisioningStore, MikroSigningKeyRepository, closeOrm, openOrm, openRepositories, pingControlPlane, PolledRevocationList, SqlComputeInstances, SqlComputeStore, SqlInsightsRetention, SqlObserverStore, SqlAuthSettings, SqlQueryMinutes, SqlSignInFailureStore, SqlSpentSsoStates, SqlSsoLoginStates, SqlSsoRegistrations, type MikroORM } from '@platform/persistence';
import { BACKUP_DEFAULTS, type BackupSettings } from '@platform/postgres-launcher';
import { startWithClosers, type Closers } from '@platform/process';
import { BackupScheduler, ComputeReconciler, DatabaseMover, DatabaseReconciler, PointInTimeCopier, DiskSpaceProbe, LocalComputeDriver, ObserverSampler, PgClusterDirectory } from '@platform/provisioner';
import type { ApiConfig } from './config.js';
import { consoleAssets, consoleRoutes, registerConsoleClient, type ConsoleAssets } from './console.js';
import { faultInjector } from './fault-point.js';
import { openMailServices, type MailServices } from './mail-services.js';
import { resealSsoSecrets } from './sso-key-rotation.js';
import { tokenEndpoint, type ApiScope } from './token-endpoint.js';

/** The control-plane advisory lock of the replica that samples the database servers (any fixed number). */
const OBSERVER_LOCK_KEY = 7_230_001;
const INSIGHTS_HOUSEKEEPING_MS = 10 * 60_000;

/** `close` stops taking requests, lets in-flight ones finish, stops the provisioner, closes connections. */
export type RunningApi = Serving;

/** Background work that starts only once the API listens. */
interface Loop {
  start(): void;
}

/** What every step of the start shares: each step pushes what it opened onto `closers`. */
interface Opening {
  config: ApiConfig;
  logger: Logger;
  closers: Closers;
  orm: MikroORM;
}

type Clusters = Awaited<ReturnType<typeof openClusters>>;

/**
 * Opens the control plane, the clusters and the keys, listens, and then starts the provisioner and
 * the insights sampler; closing undoes it in the reverse order (so does a start that fails midway).
 */
export async function startApi(config: ApiConfig, options: { logger?: Logger } = {}): Promise<RunningApi> {
  const logger = options.logger ?? pino({ name: 'api', level: config.logLevel });
  return startWithClosers(logger, async (closers) => {
    closers.push('log', () => logger.info('api stopped'));
    const orm = await openOrm({ databaseUrl: config.databaseUrl, connectTimeoutMs: config.postgres.connectTimeoutMs });
    closers.push('control plane', () => closeOrm(orm, { log: logger }));
    const opening: Opening = { config, logger, closers, orm };
    const clusters = await openClusters(opening);
    const keys = await openSigningKeys(opening);
    const tokenVerifier = await openTokenVerifier(opening, keys);
    const provisioners = openProvisioners(opening, clusters);
    const signIn = passwordSignIn(config, new SqlSignInFailureStore(orm), systemClock);
    const tokens = await tokenEndpoint(orm, config, keys, signIn, logger);
    closers.push('token endpoint', () => tokens.stop());
    const backups = openBackups(opening, clusters.computeDriver);
    // Mail of the family surface: reset, verification and invite links.
    const mail = openMailServices(config, new SqlSignInFailureStore(orm), logger, closers);
    const services = await managementServices(opening, { clusters, keys, signIn, provisioners, backups, mail });
    const sampling = openInsightsSampling(opening, clusters.directory);
    // The web console: its bundle made now (a broken one fails the start), its client registered for this public address.
    const consoleBundle = await consoleAssets();
    if (await registerConsoleClient(orm, config.api.publicBaseUrl)) logger.info({ clientId: 'platform-console' }, 'console client registered for this public address');
    const app = managementApp(opening, { services, tokens, tokenVerifier, console: consoleBundle });
    const serving = await serve(app, { host: config.api.host, port: config.api.port, limits: config.http, tls: config.api.tls });
    // Pushed last, closed first: the requests it drains still find the loops running.
    closers.push('http server', () => serving.close());
    // Only now: a start that fails (a taken port, a refused reseal) must not have run a pass (compute
    // servers spawned, DDL, a dump) that its closing then waits for, again at every restart.
    for (const loop of [provisioners.databases, provisioners.compute, ...sampling]) loop.start();
    if (config.backups.enabled) backups.start();
    applyLimitsLater(clusters.directory, logger);
    logger.info({ url: serving.url }, 'api listening');
    return { url: serving.url, server: serving.server, close: () => closers.close() };
  });
}

/**
 * The clusters that hold the databases, dedicated compute (local PostgreSQL servers; a database
 * on one is reached there), and the budget of connections to them.
 */
async function openClusters({ config, logger, closers }: Opening) {
  const connections = new ConnectionBudget(config.dataPlane);
  closers.push('data-plane connections', () => connections.close());
  const computeDriver = new LocalComputeDriver({
    dir: config.compute.dir,
    extensionsDir: config.compute.extensionsDir,
    backups: computeBackups(config, logger),
    onBackupError: (instanceId, error) => logger.warn({ instanceId, err: error }, 'the first backup of a compute instance’s server failed; the backup scheduler takes it'),
  });
  const directory = new PgClusterDirectory(
    config.regions,
    config.clusterUrls,
    (instanceId) => computeDriver.adminUrl(instanceId),
    config.databaseLimits,
    (repair) => logger.error({ role: repair.role, removed: repair.removed }, 'a role made for a customer held what it may not; revoked'),
    config.postgres.connectTimeoutMs,
  );
  closers.push('clusters', () => directory.close());
  closers.push('compute servers', () => computeDriver.close());
  // Defence in depth: no role made for customers keeps a power over the cluster, whoever gave it.
  // A cluster that does not answer now is audited at its databases' next repair instead.
  await directory.auditCustomerRoles().catch((error) => logger.warn({ err: error }, 'auditing customer roles failed; the next schema repair audits them'));
  return { directory, computeDriver, connections };
}

/**
 * Where dedicated compute instances' servers archive their WAL and keep their backups: the
 * repository of BACKUP_DIR (npm start sets it to the embedded cluster's), under a stanza each.
 * None when backups are off, BACKUP_DIR is unset, or pgBackRest is missing (said once).
 */
function computeBackups(config: ApiConfig, logger: Logger): Omit<BackupSettings, 'stanza'> | undefined {
  const { backups } = config;
  if (!backups.enabled || backups.dir === undefined || config.compute.types.length === 0) return undefined;
  if (!existsSync(backups.pgbackrest)) {
    logger.warn({ pgbackrest: backups.pgbackrest }, 'pgBackRest is missing: compute instances’ servers archive no WAL and take no backups (node tools/pgbackrest.mjs)');
    return undefined;
  }
  return {
    pgbackrest: backups.pgbackrest,
    repoDir: backups.dir,
    retentionDays: backups.retentionDays,
    walQueueMaxMiB: backups.walQueueMaxMiB,
    archiveTimeoutSeconds: BACKUP_DEFAULTS.archiveTimeoutSeconds,
  };
}

/**
 * This API signs too (user tokens, its token endpoint): its private halves are sealed (plain ones
 * from an older release sealed here), a fresh installation's first key made, and the key in use
 * opened before it listens.
 */
async function openSigningKeys({ config, logger, orm }: Opening): Promise<KeySet> {
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, sealer: config.signingKeySecrets, log: logger });
  await keys.prepareForSigning({ maxTokenSeconds: maxSignedTokenSeconds(config.developerTokenTtlSeconds) });
  return keys;
}

/** Tokens verified against the token service's keys; a revoked refresh-token family's stop working within one poll. */
async function openTokenVerifier({ config, logger, closers, orm }: Opening, keys: KeySet): Promise<TokenVerifier> {
  const revocations = new PolledRevocationList(orm, {
    pollMs: config.revocationPollMs,
    retainSeconds: config.developerTokenTtlSeconds + 60,
    onError: (error) => logger.warn({ err: error }, 'reading revoked token families failed; retrying'),
  });
  await revocations.start();
  closers.push('revocation poll', () => revocations.stop());
  return new JwtTokenVerifier(keys, { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, userAudience: config.api.publicApiUrl, clock: systemClock, revocations });
}

/**
 * The reconcilers, not started: databases from REQUESTED to READY (and dropped), compute instances
 * through their steps. Their stops are pushed now, before the HTTP server's, so that they stop after it.
 */
function openProvisioners({ config, logger, closers, orm }: Opening, clusters: Clusters) {
  const faultPoint = config.faultPoint ? faultInjector(config.faultPoint, logger) : undefined;
  const mover = new DatabaseMover(
    { pgDump: join(config.compute.clientBin, 'pg_dump'), pgRestore: join(config.compute.clientBin, 'pg_restore') },
    config.databaseLimits.maxConnections,
  );
  // Restores and branches: a scratch server per copy, beside the compute instances' clusters.
  const copier = new PointInTimeCopier({
    clusterAdminUrl: (region) => config.clusterUrls[region],
    instanceAdminUrl: (instanceId) => clusters.computeDriver.adminUrl(instanceId),
    pgbackrest: config.backups.pgbackrest,
    scratchDir: join(config.compute.dir, 'restores'),
    mover,
    log: logger.child({ component: 'provisioner' }),
    faultPoint,
  });
  const databases = new DatabaseReconciler({
    store: new MikroProvisioningStore(orm, systemClock),
    clusters: clusters.directory,
    copier,
    intervalMs: config.reconcileIntervalMs,
    log: logger.child({ component: 'provisioner' }),
    faultPoint,
  });
  const compute = new ComputeReconciler({
    store: new SqlComputeStore(orm, systemClock),
    driver: clusters.computeDriver,
    mover,
    clusters: clusters.directory,
    clusterAdminUrl: (region) => config.clusterUrls[region],
    intervalMs: config.compute.intervalMs,
    // Longer than any replica keeps a database's location (the locator's cache).
    dropGraceMs: config.databaseCacheMs + 5_000,
    log: logger.child({ component: 'compute' }),
    faultPoint,
  });
  closers.push('provisioner', () => databases.stop());
  closers.push('compute reconciler', () => compute.stop());
  return { databases, compute, copier };
}

/** The ports every request shares; each request adds repositories over its own unit of work. */
async function managementServices(
  { config, logger, orm }: Opening,
  {
    clusters,
    keys,
    signIn,
    provisioners,
    backups,
    mail,
  }: { clusters: Clusters; keys: KeySet; signIn: ReturnType<typeof passwordSignIn>; provisioners: ReturnType<typeof openProvisioners>; backups: BackupScheduler; mail: MailServices },
): Promise<ManagementServices> {
  const ssoRegistrations = new SqlSsoRegistrations(orm);
  if (config.ssoSecrets) await resealSsoSecrets(ssoRegistrations, config.ssoSecrets, logger);
  const disks = diskSpaceProbe(config, logger);
  // Each database is reached as its own service role, never as the cluster's superuser; a database
  // built before that role existed gets it (built-in schema step 5) at its first refused login.
  const dataPlane = new PgDataPlane(
    clusters.connections,
    (database) => serviceUrl(config.clusterUrls[database.region], database.physicalName, database.server),
    (database) => clusters.directory.forDatabase(database).upgradeBuiltInSchema(database.physicalName),
  );
  return {
    clusters: clusters.directory,
    // Credentials are login roles on the clusters: the same directory creates and drops them.
    loginRoles: clusters.directory,
    credentialsPerDatabase: config.credentialsPerDatabase,
    provisioner: provisioners.databases,
    copier: provisioners.copier,
    deleteRetentionSeconds: config.databaseDeleteRetentionSeconds,
    locator: new CachedDatabaseLocator(orm, { ttlMs: config.databaseCacheMs }),
    dataPlane,
    // One-time tokens live in each database's built-in schema, reached the same way.
    accountMail: { accountTokens: dataPlane, ...mail },
    ...signIn,
    tokens: new JwtUserTokenIssuer(keys, { issuer: config.oauth.issuer, audience: config.api.publicApiUrl, clock: systemClock }),
    sessionTtlSeconds: config.sessionTtlSeconds,
    membersCreateUsers: config.membersCreateUsers,
    membersDeleteTenants: config.membersDeleteTenants,
    membersLinkUsers: config.membersLinkUsers,
    selfSignUp: config.selfSignUp,
    authSettings: new SqlAuthSettings(orm),
    familyAuth: { csrfSecret: config.csrfSecret, allowedOrigins: config.allowedOrigins },
    sessionCookie: sessionCookieFor(config.api.publicApiUrl),
    secrets: new Sha256ClientSecrets(),
    publicApiUrl: config.api.publicApiUrl,
    publicBaseUrl: config.api.publicBaseUrl,
    ssoRegistrations,
    ssoSecrets: config.ssoSecrets,
    loginStates: new SqlSsoLoginStates(orm),
    // The family surface's SSO state cookie: sealed with keys derived from the signing-key ring, which every replica has.
    ssoStateSealer: config.signingKeySecrets.derive(FAMILY_SSO_STATE_PURPOSE),
    spentSsoStates: new SqlSpentSsoStates(orm),
    relyingParty: new OpenIdRelyingParty({ allowLoopbackHttp: config.ssoAllowLoopbackHttp }),
    gatewayUrl: config.gateway.publicUrl,
    pooledGatewayUrl: config.gateway.pooledPublicUrl,
    controlPlaneReady: () => pingControlPlane(orm, config.postgres.readinessTimeoutMs),
    diskSpace: () => disks.report(),
    backups: () => backups.report(),
    insights: new SqlQueryMinutes(orm),
    insightsRetention: config.insightsRetention,
    clock: systemClock,
    computeInstances: new SqlComputeInstances(orm),
    computeCatalog: config.compute.types,
    computeProvisioner: provisioners.compute,
  };
}

/** The management API and the token endpoint, over the shared ports and each request's repositories. */
function managementApp(
  { config, logger, orm }: Opening,
  { services, tokens, tokenVerifier, console }: { services: ManagementServices; tokens: Awaited<ReturnType<typeof tokenEndpoint>>; tokenVerifier: TokenVerifier; console: ConsoleAssets },
) {
  const info = managementApiInfo({ buildHash: config.buildHash, publicBaseUrl: config.api.publicBaseUrl, publicApiUrl: config.api.publicApiUrl });
  const consoleSettings = { title: info.title, issuer: config.oauth.issuer, publicBaseUrl: config.api.publicBaseUrl };
  return createHttpApp<ApiScope>({
    routes: [...managementRoutes, tokens.route, tokens.revokeRoute, ...(consoleRoutes(console, consoleSettings) as Route<ApiScope>[])],
    logger,
    tokenVerifier,
    validateResponses: config.validateResponses,
    allowedOrigins: config.allowedOrigins,
    sessionCookieName: services.sessionCookie.name,
    openScope: () => {
      const repositories = openRepositories(orm);
      return { ...services, ...repositories, tokenService: tokens.scopeFor(repositories) };
    },
    openapi: info,
    site: {
      links: [
        { rel: 'console', href: `${config.api.publicBaseUrl.replace(/\/+$/, '')}/console`, title: 'Web console: sign in as a developer' },
        { rel: 'tokenService', href: config.oauth.issuer, title: 'Token service (OAuth 2.0): developers sign in there' },
      ],
    },
    trustedProxies: config.trustedProxies,
    deadlineMs: config.postgres.requestDeadlineMs,
  });
}

/**
 * The database servers' own view for insights, and the roll-up of old figures, not started: one
 * replica does both, the one holding the lock.
 */
function openInsightsSampling({ config, logger, closers, orm }: Opening, clusters: PgClusterDirectory): Loop[] {
  const lock = new AdvisoryLeader(config.databaseUrl, OBSERVER_LOCK_KEY);
  closers.push('observer lock', () => lock.close());
  const observer = new ObserverSampler({
    clusters,
    store: new SqlObserverStore(orm),
    intervalMs: config.insightsSampleMs,
    isLeader: () => lock.isLeader(),
    log: logger.child({ component: 'observer' }),
  });
  closers.push('observer', () => observer.stop());
  const housekeeping = insightsHousekeeping({
    retention: new SqlInsightsRetention(orm),
    keep: config.insightsRetention,
    isLeader: () => lock.isLeader(),
    everyMs: INSIGHTS_HOUSEKEEPING_MS,
    log: logger.child({ component: 'insights-housekeeping' }),
  });
  closers.push('insights housekeeping', () => housekeeping.stop());
  return [observer, housekeeping];
}

/** The servers of the control plane and of the served regions, as /readyz and the backup loop see them. */
function platformServers(config: ApiConfig): { name: string; url: string }[] {
  return [{ name: 'control plane', url: config.databaseUrl }, ...config.regions.map((region) => ({ name: region, url: config.clusterUrls[region] }))];
}

/**
 * Base backups of the clusters whose backup configuration is on this machine, and every server's
 * archiving for /readyz; not started (BACKUPS=off leaves it so: readiness still reports archiving).
 */
function openBackups({ config, logger, closers }: Opening, computeDriver: LocalComputeDriver): BackupScheduler {
  const scheduler = new BackupScheduler({
    servers: platformServers(config),
    // Instances' servers only where they are backed up: otherwise there is nothing of theirs to report.
    moreServers: computeDriver.backsUp
      ? () => computeDriver.runningServers().map(({ instanceId, adminUrl }) => ({ name: `compute instance ${instanceId}`, url: adminUrl }))
      : undefined,
    pgbackrest: config.backups.pgbackrest,
    schedule: { fullEveryMs: config.backups.fullEveryHours * 3_600_000, diffEveryMs: config.backups.diffEveryHours * 3_600_000 },
    intervalMs: config.backups.checkMs,
    timeoutMs: config.postgres.readinessTimeoutMs,
    log: logger.child({ component: 'backups' }),
  });
  closers.push('backups', () => scheduler.stop());
  return scheduler;
}

/** The disks of the control plane's server and of the served regions' clusters, for /readyz. */
function diskSpaceProbe(config: ApiConfig, logger: Logger): DiskSpaceProbe {
  return new DiskSpaceProbe(
    platformServers(config),
    {
      warningPercent: config.diskFreeWarningPercent,
      timeoutMs: config.postgres.readinessTimeoutMs,
      onChange: (disk) =>
        disk.low
          ? logger.warn({ servers: disk.servers, freeBytes: disk.freeBytes, totalBytes: disk.totalBytes }, 'free disk space of a PostgreSQL server is under the warning threshold')
          : logger.info({ servers: disk.servers, freeBytes: disk.freeBytes }, 'free disk space of a PostgreSQL server is above the warning threshold again'),
      onUnmeasured: (servers, error) => logger.warn({ servers, err: error }, 'could not measure the free disk space of a PostgreSQL server'),
    },
  );
}

/** A changed limit reaches databases and credentials made before; a failure leaves them as they were. */
function applyLimitsLater(clusters: PgClusterDirectory, logger: Logger): void {
  clusters.applyLimits().then(
    (changed) => logger.info(changed, 'database and credential limits applied'),
    (error: unknown) => logger.warn({ err: error }, 'applying database and credential limits failed; the next start tries again'),
  );
}
