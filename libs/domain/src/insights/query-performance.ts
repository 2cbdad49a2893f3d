import type { Clock } from '../ports.js';
import type { DataPlane } from '../data-plane.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Principal, Workspace } from '../model.js';
import type { DatabaseDeps } from '../use-cases/databases.js';
import { getWorkspace } from '../use-cases/workspaces.js';
import { isUuid } from '../uuid.js';
import type { LatencyHistogram } from './latency-histogram.js';

/** Bucket lengths in seconds. */
export const GRANULARITIES = { '1m': 60, '5m': 300, '1h': 3_600, '1d': 86_400 } as const;
export type Granularity = keyof typeof GRANULARITIES;

/** The longest window per granularity (seconds): a day of minutes, a week of 5 minutes, 93 days of hours, 400 days. */
export const MAX_WINDOW_SECONDS: Record<Granularity, number> = { '1m': 86_400, '5m': 7 * 86_400, '1h': 93 * 86_400, '1d': 400 * 86_400 };

/** How long figures are kept at each resolution (README "Query-performance insights"). */
export interface InsightsRetention {
  /** Minute rows: at least the longest 5m window (7 days). */
  minuteDays: number;
  /** Hour rows: at least the longest 1h window (93 days). */
  hourDays: number;
  /** Day rows, then gone. */
  dayDays: number;
}

export const DEFAULT_INSIGHTS_RETENTION: InsightsRetention = { minuteDays: 8, hourDays: 95, dayDays: 800 };

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
  insightsRetention: InsightsRetention;
  clock: Clock;
}

function invalidWindow(message: string): ValidationError {
  return new ValidationError('invalid_window', message);
}

const DAY_MS = 86_400_000;

/**
 * Both bounds whole minutes, end after start, the window within the granularity's limit; and
 * what it reaches back to is still kept finely enough: minutes (1m, 5m) within their retention,
 * and a window reaching into rolled-up hours (days) starting on a whole UTC hour (day), since a
 * rolled-up hour cannot be split between buckets.
 */
export function checkWindow(start: Date, end: Date, granularity: Granularity, now: Date, retention: InsightsRetention): void {
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
  // The same cutoffs the roll-up uses: whole UTC hours (days) that many days back.
  const minutesFrom = Math.floor((now.getTime() - retention.minuteDays * DAY_MS) / 3_600_000) * 3_600_000;
  const hoursFrom = Math.floor((now.getTime() - retention.hourDays * DAY_MS) / DAY_MS) * DAY_MS;
  const from = start.getTime();
  if ((granularity === '1m' || granularity === '5m') && from < minutesFrom) {
    throw invalidWindow(`start: figures by the minute are kept for ${retention.minuteDays} days; use 1h or 1d for older ones`);
  }
  if (granularity === '1h' && from < hoursFrom) {
    throw invalidWindow(`start: figures by the hour are kept for ${retention.hourDays} days; use 1d for older ones`);
  }
  if (granularity === '1h' && from < minutesFrom && from % 3_600_000 !== 0) {
    throw invalidWindow(`start must be a whole UTC hour for hourly figures older than ${retention.minuteDays} days`);
  }
  if (granularity === '1d' && from < minutesFrom && from % (from < hoursFrom ? DAY_MS : 3_600_000) !== 0) {
    throw invalidWindow(`start must be a whole UTC ${from < hoursFrom ? 'day' : 'hour'} for daily figures of that age`);
  }
}

/** The window asked for when a bound is left out: the last hour of whole minutes. */
export const DEFAULT_WINDOW_MS = 3_600_000;

/**
 * The window with its defaults: `end` the current whole minute (what has fully elapsed), `start`
 * an hour before `end`. Either may be given alone.
 */
export function windowOf(start: Date | undefined, end: Date | undefined, now: Date): { start: Date; end: Date } {
  const until = end ?? new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  return { start: start ?? new Date(until.getTime() - DEFAULT_WINDOW_MS), end: until };
}

/**
 * The database a path names, by id or by name. Unambiguous: an id is a UUID, which has hyphens,
 * and a database name cannot (letters, digits and underscores); names are unique among a
 * workspace's live databases.
 */
function findByIdOrName(deps: DatabaseDeps, workspace: Workspace, idOrName: string) {
  return isUuid(idOrName) ? deps.databases.findLiveById(workspace, idOrName.toLowerCase()) : deps.databases.findLiveByName(workspace, idOrName);
}

/**
 * Query figures of one database of the workspace (SPEC GET W/databases/{databaseId}/insights/
 * query-performance), per bucket from `start`; the last bucket ends at `end` and may be shorter.
 * Every bucket is present, with zeros where nothing ran. A database of another workspace, or a
 * tenant the database does not have, is not found. The database is named by its id or its name;
 * a bound left out takes the default window (`windowOf`).
 */
export async function queryPerformance(
  deps: InsightsDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseIdOrName: string,
  query: { start?: Date; end?: Date; granularity: Granularity; tenantId?: string },
): Promise<QueryPerformance> {
  const workspace = await getWorkspace(deps, caller, workspaceSlug);
  const database = await findByIdOrName(deps, workspace, databaseIdOrName);
  if (!database) throw new NotFoundError('database_not_found', `Database '${databaseIdOrName}' not found`);
  const { start, end } = windowOf(query.start, query.end, deps.clock.now());
  checkWindow(start, end, query.granularity, deps.clock.now(), deps.insightsRetention);
  if (query.tenantId !== undefined) {
    const tenant = database.status === 'READY' ? await deps.dataPlane.open(database).tenants.find(query.tenantId) : null;
    if (!tenant) throw new NotFoundError('tenant_not_found', `Tenant '${query.tenantId}' not found`);
  }
  const granularitySeconds = GRANULARITIES[query.granularity];
  const buckets = await deps.insights.buckets({ databaseId: database.id, tenantId: query.tenantId, start, end, granularitySeconds });
  return {
    // Where it runs now; figures of earlier minutes were measured where it ran then.
    source: database.server ? 'dedicated' : 'shared',
    granularity: query.granularity,
    points: buckets.map(({ start: bucketStart, queries, latency, statements, cpuMs }) => {
      const seconds = (Math.min(end.getTime(), bucketStart.getTime() + granularitySeconds * 1000) - bucketStart.getTime()) / 1000;
      return {
        timestamp: bucketStart,
        proxyQueriesPerSecond: queries / seconds,
        observerQueriesPerSecond: statements === null ? null : statements / seconds,
        observerP99LatencyMs: latency.percentileMs(0.99),
        observerCpuMilliseconds: cpuMs,
      };
    }),
  };
}
