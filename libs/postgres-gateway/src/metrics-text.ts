import type { PostgresGateway } from './gateway-server.js';
import type { QueryCell } from './query-counters.js';

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
  const pooled = (['idle', 'lent', 'pinned'] as const).map((state) => [state, gateway.pooledServerSessions(state)] as const);
  if (pooled.every(([, count]) => count !== null)) {
    lines.push(
      '# HELP gateway_pooled_server_sessions Server sessions of the pooled endpoint’s pools: idle, lent to a client for a transaction, or pinned to a client that LISTENs until it leaves.',
      '# TYPE gateway_pooled_server_sessions gauge',
      ...pooled.map(([state, count]) => `gateway_pooled_server_sessions{state="${state}"} ${count}`),
    );
  }
  return `${lines.join('\n')}\n`;
}
