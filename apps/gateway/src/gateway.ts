import { createHash } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { REGIONS } from '@platform/domain';
import { startAdminServer } from '@platform/http';
import { closeOrm, ControlPlaneCancelRelay, ControlPlaneConnectionRoutes, type MikroORM, openOrm, pingControlPlane, SqlQueryMinutes } from '@platform/persistence';
import { InsightsWriter, metricsText, PostgresGateway, regionBackend } from '@platform/postgres-gateway';
import { startWithClosers } from '@platform/process';
import type { GatewayConfig } from './config.js';
import { answerSupervisor, tellSupervisorStarted, tellSupervisorStopping } from './workers.js';
import { ClusterVerifiers } from './verifiers.js';

export interface RunningGateway {
  /** Where PostgreSQL clients connect. */
  host: string;
  port: number;
  /** The pooled endpoint's port; null when it is off. */
  pooledPort: number | null;
  /** Health (`/healthz`) and query counters (`/metrics`, Prometheus text); a worker's supervisor answers them instead (null). */
  adminUrl: string | null;
  gateway: PostgresGateway;
  close(): Promise<void>;
}

/** Opens the control plane (for routes), listens for PostgreSQL clients and for health and metrics. */
export async function startGateway(config: GatewayConfig, options: { logger?: Logger; worker?: boolean } = {}): Promise<RunningGateway> {
  const logger = options.logger ?? pino({ name: 'gateway', level: config.logLevel });
  return startWithClosers(logger, async (closers) => {
    closers.push('log', () => logger.info('gateway stopped'));
    const orm = await openOrm({ databaseUrl: config.databaseUrl, connectTimeoutMs: config.postgres.connectTimeoutMs, poolSize: config.controlPlanePoolSize });
    closers.push('control plane', () => closeOrm(orm, { log: logger }));
    // Protocol 3.0 cancel requests for sessions of other gateways reach them through the control plane.
    const cancelRelay = new ControlPlaneCancelRelay(orm, config.databaseUrl, {
      cancel: (processId, secretKey) => void gateway.cancelFromPeer(processId, secretKey),
      lost: (error) => logger.warn({ err: error }, 'the cancel relay lost its control plane connection; reconnecting'),
    });
    const verifiers = config.gateway.pooledPort === null ? null : new ClusterVerifiers(config.clusterUrls, REGIONS, config.postgres.connectTimeoutMs);
    if (verifiers) closers.push('verifier reads', () => verifiers.close());
    const gateway = gatewayServer(config, orm, logger, cancelRelay, verifiers);
    await cancelRelay.start();
    closers.push('cancel relay', () => cancelRelay.stop());
    if (gateway.counters) {
      const insights = new InsightsWriter(gateway.counters, new SqlQueryMinutes(orm), config.insightsFlushMs, logger);
      insights.start();
      // Closed after the last connection (closed below it): its queries are in the final write.
      closers.push('insights', () => insights.stop());
    }
    const isReady = () => pingControlPlane(orm, config.postgres.readinessTimeoutMs);
    if (options.worker) {
      // A worker does not listen: its supervisor does, and hands it connections (workers.ts).
      closers.push('gateway', () => gateway.close());
      // Closed first (closers go last in, first out): the supervisor sends no more while the sessions end.
      closers.push('supervisor hand-overs', () => tellSupervisorStopping());
      answerSupervisor({ adopt: (socket, endpoint, acceptedAt) => gateway.adopt(socket, endpoint, acceptedAt), metrics: () => metricsText(gateway), ready: isReady });
      tellSupervisorStarted();
      logger.debug('gateway worker serving');
      const { host, port, pooledPort } = config.gateway;
      return { host, port, pooledPort, adminUrl: null, gateway, close: () => closers.close() };
    }
    const listening = await gateway.listen();
    closers.push('gateway', () => gateway.close());
    const admin = await startAdminServer({ host: config.adminHost, port: config.adminPort, token: config.adminToken, realm: 'gateway admin', isReady, metrics: () => metricsText(gateway) });
    closers.push('admin', () => admin.close());
    logger.info({ host: listening.host, port: listening.port, pooledPort: listening.pooledPort, tls: config.tls !== null, allowPlain: config.allowPlain, adminUrl: admin.url }, 'gateway listening');
    return { host: listening.host, port: listening.port, pooledPort: listening.pooledPort, adminUrl: admin.url, gateway, close: () => closers.close() };
  });
}

/** The PostgreSQL server: routes credentials through the control plane to the regions' clusters. */
function gatewayServer(config: GatewayConfig, orm: MikroORM, logger: Logger, cancelRelay: ControlPlaneCancelRelay, verifiers: ClusterVerifiers | null): PostgresGateway {
  return new PostgresGateway({
    host: config.gateway.host,
    port: config.gateway.port,
    routes: new ControlPlaneConnectionRoutes(orm),
    backends: REGIONS.map((region) => regionBackend(region, config.clusterUrls[region])),
    tls: config.tls ?? undefined,
    allowPlain: config.allowPlain,
    countQueries: config.countQueries,
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    clientStallMs: config.clientStallMs,
    maxConnections: config.maxConnections,
    maxLoginsPerAddress: config.maxLoginsPerAddress,
    maxLoginsPerUser: config.maxLoginsPerUser,
    maxLoginsPerUserAddress: config.maxLoginsPerUserAddress,
    scramStepTimeoutMs: config.scramStepTimeoutMs,
    cancelRelay,
    ...(verifiers && config.gateway.pooledPort !== null ? { pooled: { port: config.gateway.pooledPort, pools: config.pools, verifiers } } : {}),
    // Stable across restarts and replicas of one platform, unknown outside it.
    mockSaltKey: createHash('sha256').update(`gateway mock salt\0${config.databaseUrl}`).digest(),
    log: logger,
  });
}
