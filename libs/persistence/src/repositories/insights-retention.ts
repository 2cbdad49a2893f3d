import type { MikroORM } from '@mikro-orm/postgresql';
import type { InsightsRetention } from '@platform/domain';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The start of the UTC hour (or day) `days` before `now`: everything before it is rolled up. */
function cutoff(now: Date, days: number, unitMs: number): Date {
  return new Date(Math.floor((now.getTime() - days * DAY_MS) / unitMs) * unitMs);
}

/**
 * Keeps insight figures within their retention: minutes older than `minuteDays` move into hour
 * rows, hours older than `hourDays` into day rows, days older than `dayDays` are deleted. Each
 * move is one statement that deletes the finer rows it inserts the coarser ones from, and cutoffs
 * fall on whole UTC hours and days, so an hour (a day) is rolled whole. Histograms are added
 * bucket by bucket, as readers do.
 */
export class SqlInsightsRetention {
  constructor(private readonly orm: MikroORM) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async rollUp(now: Date, retention: InsightsRetention): Promise<void> {
    const hourCutoff = cutoff(now, retention.minuteDays, HOUR_MS);
    const dayCutoff = cutoff(now, retention.hourDays, DAY_MS);
    // Each move is one statement (a delete feeding an insert): atomic on its own.
    {
      await this.moveQueries(`delete from query_minutes where minute < ? returning database_id, minute as period, tenant_id, queries, errors, total_ms, latency_buckets, latency_counts`, hourCutoff, '1h', 'hour');
      await this.moveQueries(
        `delete from query_rollups where resolution = '1h' and period < ? returning database_id, period, tenant_id, queries, errors, total_ms, latency_buckets, latency_counts`,
        dayCutoff,
        '1d',
        'day',
      );
      await this.moveObserved(`delete from observer_minutes where minute < ? returning database_id, minute as period, statements, cpu_ms`, hourCutoff, '1h', 'hour');
      await this.moveObserved(`delete from observer_rollups where resolution = '1h' and period < ? returning database_id, period, statements, cpu_ms`, dayCutoff, '1d', 'day');
      const dropBefore = cutoff(now, retention.dayDays, DAY_MS);
      await this.execute(`delete from query_rollups where resolution = '1d' and period < ?`, [dropBefore]);
      await this.execute(`delete from observer_rollups where resolution = '1d' and period < ?`, [dropBefore]);
    }
  }

  private async moveQueries(take: string, before: Date, resolution: '1h' | '1d', unit: 'hour' | 'day'): Promise<void> {
    await this.execute(
      `with moved as (${take}),
       totals as (
         select database_id, date_trunc('${unit}', period, 'UTC') as period, tenant_id,
                sum(queries) as queries, sum(errors) as errors, sum(total_ms) as total_ms
         from moved group by 1, 2, 3),
       buckets as (
         select database_id, date_trunc('${unit}', period, 'UTC') as period, tenant_id, h.bucket, sum(h.n) as n
         from moved cross join lateral unnest(latency_buckets, latency_counts) as h (bucket, n) group by 1, 2, 3, 4),
       histograms as (
         select database_id, period, tenant_id, array_agg(bucket order by bucket) as buckets, array_agg(n order by bucket) as counts
         from buckets group by 1, 2, 3)
       insert into query_rollups (resolution, database_id, period, tenant_id, queries, errors, total_ms, latency_buckets, latency_counts)
       select '${resolution}', t.database_id, t.period, t.tenant_id, t.queries, t.errors, t.total_ms,
              coalesce(h.buckets, '{}'), coalesce(h.counts, '{}')
       from totals t left join histograms h using (database_id, period, tenant_id)`,
      [before],
    );
  }

  private async moveObserved(take: string, before: Date, resolution: '1h' | '1d', unit: 'hour' | 'day'): Promise<void> {
    await this.execute(
      `with moved as (${take})
       insert into observer_rollups (resolution, database_id, period, statements, cpu_ms)
       select '${resolution}', database_id, date_trunc('${unit}', period, 'UTC'), sum(statements), sum(cpu_ms)
       from moved group by 2, 3`,
      [before],
    );
  }
}
