import type { DataPlane } from '../data-plane.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Principal } from '../model.js';
import type { DatabaseDeps } from '../use-cases/databases.js';
import { getWorkspace } from '../use-cases/workspaces.js';
import type { LatencyHistogram } from './latency-histogram.js';

/** Bucket lengths in seconds. */
export const GRANULARITIES = { '1m': 60, '5m': 300, '1h': 3_600, '1d': 86_400 } as const;
export type Granularity = keyof typeof GRANULARITIES;

/** The longest window per granularity (seconds): a day of minutes, a week of 5 minutes, 93 days of hours, 400 days. */
export const MAX_WINDOW_SECONDS: Record<Granularity, number> = { '1m': 86_400, '5m': 7 * 86_400, '1h': 93 * 86_400, '1d': 400 * 86_400 };

/** One database's (and tenant's) queries in one minute as one gateway saw them. */
export interface QueryMinute {
  databaseId: string;
  tenantId: string | null;
  /** The minute's start. */
  minute: Date;
  queries: number;
  errors: number;
  totalMs: number;
  latency: { buckets: number[]; counts: number[] };
}

/** Where gateways write their minutes: one row per gateway, database, tenant and minute, replaced on each write. */
export interface QueryMinuteSink {
  save(gatewayId: string, minutes: QueryMinute[]): Promise<void>;
}

export interface InsightsBucket {
  start: Date;
  queries: number;
  latency: LatencyHistogram;
  /** The database server's statements and its backends' CPU in the bucket; null when not known (or for a tenant). */
  statements: number | null;
  cpuMs: number | null;
}

/** Reads minutes back, added up per bucket across gateways (and tenants, unless one is asked for). */
export interface InsightsStore {
  buckets(input: { databaseId: string; tenantId?: string; start: Date; end: Date; granularitySeconds: number }): Promise<InsightsBucket[]>;
}

export interface QueryPerformancePoint {
  timestamp: Date;
  proxyQueriesPerSecond: number;
  /** null where not known (README "Query-performance insights"). */
  observerQueriesPerSecond: number | null;
  observerP99LatencyMs: number;
  /** null where not known (README "Query-performance insights"). */
  observerCpuMilliseconds: number | null;
}

export interface QueryPerformance {
  source: string;
  granularity: Granularity;
  points: QueryPerformancePoint[];
}

export interface InsightsDeps extends DatabaseDeps {
  insights: InsightsStore;
  dataPlane: DataPlane;
}

function invalidWindow(message: string): ValidationError {
  return new ValidationError('invalid_window', message);
}

/** Both bounds whole minutes, end after start, the window within the granularity's limit. */
export function checkWindow(start: Date, end: Date, granularity: Granularity): void {
  for (const [field, value] of [
    ['start', start],
    ['end', end],
  ] as const) {
    if (value.getTime() % 60_000 !== 0) throw invalidWindow(`${field} must be a whole minute (no seconds or fractions), got ${value.toISOString()}`);
  }
  if (end.getTime() <= start.getTime()) throw invalidWindow('end must be after start');
  const limit = MAX_WINDOW_SECONDS[granularity];
  if ((end.getTime() - start.getTime()) / 1000 > limit) {
    throw invalidWindow(`a window of granularity ${granularity} spans at most ${limit / 86_400} days`);
  }
}

/**
 * Query figures of one database of the workspace (SPEC GET W/databases/{databaseId}/insights/
 * query-performance), per bucket from `start`; the last bucket ends at `end` and may be shorter.
 * Every bucket is present, with zeros where nothing ran. A database of another workspace, or a
 * tenant the database does not have, is not found.
 */
export async function queryPerformance(
  deps: InsightsDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseId: string,
  query: { start: Date; end: Date; granularity: Granularity; tenantId?: string },
): Promise<QueryPerformance> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  const database = (await deps.databases.listLive(workspace)).find((candidate) => candidate.id === databaseId);
  if (!database) throw new NotFoundError('database_not_found', `Database '${databaseId}' not found`);
  checkWindow(query.start, query.end, query.granularity);
  if (query.tenantId !== undefined) {
    const tenant = database.status === 'READY' ? await deps.dataPlane.open(database).tenants.find(query.tenantId) : null;
    if (!tenant) throw new NotFoundError('tenant_not_found', `Tenant '${query.tenantId}' not found`);
  }
  const granularitySeconds = GRANULARITIES[query.granularity];
  const buckets = await deps.insights.buckets({ databaseId, tenantId: query.tenantId, start: query.start, end: query.end, granularitySeconds });
  return {
    source: 'shared',
    granularity: query.granularity,
    points: buckets.map(({ start, queries, latency, statements, cpuMs }) => {
      const seconds = (Math.min(query.end.getTime(), start.getTime() + granularitySeconds * 1000) - start.getTime()) / 1000;
      return {
        timestamp: start,
        proxyQueriesPerSecond: queries / seconds,
        observerQueriesPerSecond: statements === null ? null : statements / seconds,
        observerP99LatencyMs: latency.percentileMs(0.99),
        observerCpuMilliseconds: cpuMs,
      };
    }),
  };
}
