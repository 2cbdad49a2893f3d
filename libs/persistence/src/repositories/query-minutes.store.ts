import type { MikroORM } from '@mikro-orm/postgresql';
import { LatencyHistogram, type InsightsBucket, type InsightsStore, type QueryMinute, type QueryMinuteSink } from '@platform/domain';

/** The tenant_id of a minute outside any tenant. */
const NO_TENANT = '00000000-0000-0000-0000-000000000000';
const arrayLiteral = (values: number[]) => `{${values.join(',')}}`;

/**
 * Gateways' per-minute query figures in the control plane. Each gateway writes its own rows
 * (replacing what it wrote for that minute before), so several gateways never overwrite each
 * other; reading adds them up per bucket in SQL, histograms bucket by bucket.
 */
export class SqlQueryMinutes implements QueryMinuteSink, InsightsStore {
  constructor(private readonly orm: MikroORM) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async save(gatewayId: string, minutes: QueryMinute[]): Promise<void> {
    if (minutes.length === 0) return;
    const values = minutes.map(() => '(?, ?, ?, ?, ?, ?, ?, ?::integer[], ?::bigint[])').join(', ');
    await this.execute(
      `insert into query_minutes (database_id, minute, tenant_id, gateway_id, queries, errors, total_ms, latency_buckets, latency_counts)
       values ${values}
       on conflict (database_id, minute, tenant_id, gateway_id) do update set
         queries = excluded.queries, errors = excluded.errors, total_ms = excluded.total_ms,
         latency_buckets = excluded.latency_buckets, latency_counts = excluded.latency_counts`,
      minutes.flatMap((row) => [
        row.databaseId,
        row.minute,
        row.tenantId ?? NO_TENANT,
        gatewayId,
        row.queries,
        row.errors,
        row.totalMs,
        arrayLiteral(row.latency.buckets),
        arrayLiteral(row.latency.counts),
      ]),
    );
  }

  async buckets(input: { databaseId: string; tenantId?: string; start: Date; end: Date; granularitySeconds: number }): Promise<InsightsBucket[]> {
    const { databaseId, tenantId, start, end, granularitySeconds } = input;
    const count = Math.ceil((end.getTime() - start.getTime()) / (granularitySeconds * 1000));
    // Minutes, and the hours (days) rolled up from older ones for buckets that can hold them: a
    // figure lives in one table only, so the union adds up.
    const resolutions = [...(granularitySeconds >= 3_600 ? ['1h'] : []), ...(granularitySeconds >= 86_400 ? ['1d'] : [])];
    const rolled = (columns: string, table: string) =>
      resolutions.length === 0 ? '' : ` union all select period, ${columns} from ${table} where resolution in (${resolutions.map((r) => `'${r}'`).join(', ')})`;
    const queryRows = `select minute as period, database_id, tenant_id, queries, latency_buckets, latency_counts from query_minutes${rolled('database_id, tenant_id, queries, latency_buckets, latency_counts', 'query_rollups')}`;
    const observerRows = `select minute as period, database_id, statements, cpu_ms from observer_minutes${rolled('database_id, statements, cpu_ms', 'observer_rollups')}`;
    const index = `floor(extract(epoch from (period - ?::timestamptz)) / ?)::int`;
    const where = `database_id = ? and period >= ? and period < ?`;
    const tenantFilter = tenantId === undefined ? '' : ' and tenant_id = ?';
    const params = [start, granularitySeconds, databaseId, start, end, ...(tenantId === undefined ? [] : [tenantId])];
    const totals = await this.execute<{ i: number; queries: string }>(
      `select ${index} as i, sum(queries) as queries from (${queryRows}) r where ${where}${tenantFilter} group by 1`,
      params,
    );
    const histograms = await this.execute<{ i: number; bucket: number; n: string }>(
      `select ${index} as i, h.bucket, sum(h.n) as n
       from (${queryRows}) r cross join lateral unnest(latency_buckets, latency_counts) as h (bucket, n)
       where ${where}${tenantFilter} group by 1, 2`,
      params,
    );
    // The server's view is per database: a tenant's buckets have none.
    const observed =
      tenantId === undefined
        ? await this.execute<{ i: number; statements: string | null; cpu_ms: number | null }>(
            `select ${index} as i, sum(statements) as statements, sum(cpu_ms) as cpu_ms from (${observerRows}) r where ${where} group by 1`,
            [start, granularitySeconds, databaseId, start, end],
          )
        : [];
    const buckets: InsightsBucket[] = Array.from({ length: count }, (_, i) => ({
      start: new Date(start.getTime() + i * granularitySeconds * 1000),
      queries: 0,
      latency: new LatencyHistogram(),
      statements: null,
      cpuMs: null,
    }));
    for (const row of totals) buckets[row.i].queries = Number(row.queries);
    for (const row of histograms) buckets[row.i].latency.add(row.bucket, Number(row.n));
    for (const row of observed) {
      buckets[row.i].statements = row.statements === null ? null : Number(row.statements);
      buckets[row.i].cpuMs = row.cpu_ms === null ? null : Number(row.cpu_ms);
    }
    return buckets;
  }
}
