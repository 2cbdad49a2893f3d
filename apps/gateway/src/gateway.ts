import { createHash, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { pino, type Logger } from 'pino';
import { REGIONS } from '@platform/domain';
import { PostgresGateway, regionBackend, type QueryCell } from '@platform/postgres-gateway';
import { ControlPlaneConnectionRoutes, openOrm, pingControlPlane, SqlQueryMinutes } from '@platform/persistence';
import type { GatewayConfig } from './config.js';
import { InsightsWriter } from './insights-writer.js';

export interface RunningGateway {
  /** Where PostgreSQL clients connect. */
  host: string;
  port: number;
  /** Health (`/healthz`) and query counters (`/metrics`, Prometheus text). */
  adminUrl: string;
  gateway: PostgresGateway;
  close(): Promise<void>;
}

/** Opens the control plane (for routes), listens for PostgreSQL clients and for health and metrics. */
export async function startGateway(config: GatewayConfig, options: { logger?: Logger } = {}): Promise<RunningGateway> {
  const logger = options.logger ?? pino({ name: 'gateway', level: config.logLevel });
  const orm = await openOrm({ databaseUrl: config.databaseUrl, connectTimeoutMs: config.postgres.connectTimeoutMs });
  const gateway = new PostgresGateway({
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
    // Stable across restarts and replicas of one platform, unknown outside it.
    mockSaltKey: createHash('sha256').update(`gateway mock salt\0${config.databaseUrl}`).digest(),
    log: logger,
  });
  const listening = await gateway.listen();
  const insights = gateway.counters && new InsightsWriter(gateway.counters, new SqlQueryMinutes(orm), config.insightsFlushMs, logger);
  insights?.start();

  const isAdmin = adminTokenCheck(config.adminToken);
  const admin = http.createServer((request, response) => {
    void answerAdmin(request.url ?? '/', isAdmin(request.headers.authorization), gateway, () => pingControlPlane(orm, config.postgres.readinessTimeoutMs)).then(({ status, type, body, headers }) => {
      response.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
      response.end(body);
    });
  });
  admin.listen(config.adminPort, config.adminHost);
  await once(admin, 'listening');
  const adminPort = (admin.address() as { port: number }).port;
  const adminUrl = `http://${config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost}:${adminPort}`;
  logger.info({ host: listening.host, port: listening.port, tls: config.tls !== null, allowPlain: config.allowPlain, adminUrl }, 'gateway listening');

  let stopping: Promise<void> | undefined;
  const shutDown = async () => {
    await new Promise<void>((resolve) => admin.close(() => resolve()));
    admin.closeAllConnections();
    await gateway.close();
    // After the last connection: its queries are in the last write.
    await insights?.stop();
    await orm.close();
    logger.info('gateway stopped');
  };
  return { host: listening.host, port: listening.port, adminUrl, gateway, close: () => (stopping ??= shutDown()) };
}

/**
 * Whether an Authorization header carries the admin token; without a token every request may read.
 * Both sides are hashed first so the comparison takes the same time whatever the header's length.
 */
function adminTokenCheck(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null) return () => true;
  const expected = createHash('sha256').update(`Bearer ${token}`).digest();
  return (authorization) => authorization !== undefined && timingSafeEqual(createHash('sha256').update(authorization).digest(), expected);
}

interface AdminAnswer {
  status: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
}

async function answerAdmin(url: string, authorized: boolean, gateway: PostgresGateway, controlPlaneReady: () => Promise<boolean>): Promise<AdminAnswer> {
  const path = url.split('?')[0];
  if (path === '/healthz') return { status: 200, type: 'application/json', body: JSON.stringify({ status: 'ok' }) };
  if (path === '/readyz') {
    const ready = await controlPlaneReady();
    return { status: ready ? 200 : 503, type: 'application/json', body: JSON.stringify({ status: ready ? 'ok' : 'control plane unreachable' }) };
  }
  // Health says nothing about customers and stays open for load balancers' probes; the metrics name
  // every database and tenant id.
  if (path === '/metrics') {
    if (!authorized) {
      const body = JSON.stringify({ errorCode: 'unauthenticated', message: 'The metrics want the admin token (Authorization: Bearer ...).', statusCode: 401 });
      return { status: 401, type: 'application/json', body, headers: { 'WWW-Authenticate': 'Bearer realm="gateway admin"' } };
    }
    return { status: 200, type: 'text/plain; version=0.0.4', body: metricsText(gateway) };
  }
  return { status: 404, type: 'application/json', body: JSON.stringify({ errorCode: 'not_found', message: `No such path: ${path}`, statusCode: 404 }) };
}

function labels(cell: QueryCell): string {
  return `database_id="${cell.databaseId}",tenant_id="${cell.tenantId ?? ''}"`;
}

/** Prometheus text exposition of the query counters and open connections. */
export function metricsText(gateway: PostgresGateway): string {
  const cells = gateway.counters?.snapshot() ?? [];
  const lines = [
    '# HELP gateway_connections Client connections open now.',
    '# TYPE gateway_connections gauge',
    `gateway_connections ${gateway.connections}`,
    '# HELP gateway_queries_total Queries answered (a simple query or an Execute), per database and tenant.',
    '# TYPE gateway_queries_total counter',
    ...cells.map((cell) => `gateway_queries_total{${labels(cell)}} ${cell.queries}`),
    '# HELP gateway_query_errors_total Queries answered with an error.',
    '# TYPE gateway_query_errors_total counter',
    ...cells.map((cell) => `gateway_query_errors_total{${labels(cell)}} ${cell.errors}`),
    '# HELP gateway_query_seconds_total Time from a query reaching the gateway to its answer leaving the backend.',
    '# TYPE gateway_query_seconds_total counter',
    ...cells.map((cell) => `gateway_query_seconds_total{${labels(cell)}} ${(cell.totalMs / 1000).toFixed(6)}`),
  ];
  return `${lines.join('\n')}\n`;
}
