import { GRANULARITIES, queryPerformance, type Granularity, type QueryPerformance } from '@platform/domain';
import { arrayOf, dateTime, nullable, num, oneOf, optional, record, text, uuid } from '@platform/http';
import { defineManagementRoute } from './management-scope.js';
import { WORKSPACE_PATH } from './path-params.js';
import { instantOf } from './request-fields.js';

const QueryPerformanceQuery = record({
  start: optional(
    text({ min: 1, max: 40, description: 'The window’s start (inclusive): a date-time on a whole minute, e.g. 2026-11-22T12:00:00Z; an hour before `end` when omitted' }),
  ),
  end: optional(text({ min: 1, max: 40, description: 'The window’s end (exclusive): a whole minute after start; the current whole minute when omitted' })),
  granularity: optional(oneOf(Object.keys(GRANULARITIES) as Granularity[], 'The bucket length: 1m (the default), 5m, 1h or 1d')),
  tenantId: optional(uuid('Only the queries of connections bound to this tenant')),
});

const PointSchema = record({
  timestamp: dateTime('The bucket’s start'),
  proxyQueriesPerSecond: num('Queries the gateway answered for the database in the bucket, per second'),
  observerQueriesPerSecond: nullable(
    num('Statements the database server completed in the bucket, per second (pg_stat_statements); null when not known, and for a tenant'),
  ),
  observerP99LatencyMs: num('The 99th percentile of query latency in the bucket, from the gateways’ merged histograms (0 without queries)'),
  observerCpuMilliseconds: nullable(
    num('CPU time the database’s backends used in the bucket (ms); null when the cluster’s processes cannot be read, and for a tenant'),
  ),
});
const QueryPerformanceSchema = record({
  source: text({ min: 1, max: 64, description: 'Where the database runs now: `shared` (its region’s shared cluster) or `dedicated` (its compute instance’s server)' }),
  granularity: oneOf(Object.keys(GRANULARITIES) as Granularity[]),
  points: arrayOf(PointSchema, 'Every bucket of the window, oldest first'),
});

function present(result: QueryPerformance) {
  return { ...result, points: result.points.map((point) => ({ ...point, timestamp: point.timestamp.toISOString() })) };
}

export const insightRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/databases/{databaseId}/insights/query-performance`,
    operationId: 'getQueryPerformance',
    summary: 'Query rate and latency of a database, per bucket of a window',
    description:
      'Developers and workspace clients only (a user token is 403 developer_token_required). The database is named by its ' +
      'id or by its name: a UUID is read as an id, anything else as a name. That is never ambiguous, since a database ' +
      'name has no hyphens (letters, digits and underscores) and a UUID has four, and a name is unique among the ' +
      'workspace’s live databases. Without `start` and `end` the window is the last hour: `end` defaults to the current ' +
      'whole minute, `start` to an hour before `end`; either may be given alone. `start` and `end` are whole ' +
      'minutes, end after start (400 invalid_window naming the field); a window spans at most 1 day at 1m, 7 days at 5m, ' +
      '93 days at 1h and 400 days at 1d; and it reaches back no further than figures are kept at its granularity ' +
      '(minutes INSIGHTS_MINUTE_RETENTION_DAYS, 8; hours INSIGHTS_HOUR_RETENTION_DAYS, 95; days INSIGHTS_DAY_RETENTION_DAYS, 800), ' +
      'starting on a whole UTC hour (day) where it reaches into rolled-up hours (days). ' +
      'Every bucket from start is present, oldest first, with zeros where nothing ran; ' +
      'the last one ends at `end` and may be shorter. A database of another workspace, a deleted one, or a tenant the ' +
      'database does not have answers 404. The proxy rate and the p99 come from the PostgreSQL gateways (written every ' +
      'GATEWAY_INSIGHTS_FLUSH_MS), the observer rate and CPU from the database servers (sampled every INSIGHTS_SAMPLE_MS).',
    tags: ['insights'],
    auth: 'management',
    params: record({
      workspaceSlug: text({ min: 1, max: 100, description: 'The workspace slug' }),
      databaseId: text({ min: 1, max: 100, description: 'The database’s id, or its name' }),
    }),
    query: QueryPerformanceQuery,
    success: { status: 200, description: 'The buckets of the window', schema: QueryPerformanceSchema },
    errors: [403, 404],
    handler: async ({ params, query, caller, scope }) =>
      present(
        await queryPerformance(scope, caller, params.workspaceSlug, params.databaseId, {
          start: query.start === undefined ? undefined : instantOf('start', query.start),
          end: query.end === undefined ? undefined : instantOf('end', query.end),
          granularity: query.granularity ?? '1m',
          tenantId: query.tenantId,
        }),
      ),
  }),
];
