import type { MikroORM } from '@mikro-orm/postgresql';
import type { ObservedDatabase, ObserverMinute, ObserverStore, Region } from '@platform/domain';

/** The observer's rows in the control plane: each sample adds to its database's minute. */
export class SqlObserverStore implements ObserverStore {
  constructor(private readonly orm: MikroORM) {}

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
  }

  async liveDatabases(): Promise<Map<string, ObservedDatabase>> {
    const rows = await this.execute<{ id: string; physical_name: string; region: Region; instance_id: string | null; server_host: string | null; server_port: number | null }>(
      `select id, physical_name, region, instance_id, server_host, server_port from databases where deleted is null and status = 'READY'`,
      [],
    );
    return new Map(
      rows.map((row) => [
        row.physical_name,
        {
          id: row.id,
          region: row.region,
          instanceId: row.instance_id,
          server: row.server_host && row.server_port ? { host: row.server_host, port: row.server_port } : null,
        },
      ]),
    );
  }

  async add(rows: ObserverMinute[]): Promise<void> {
    if (rows.length === 0) return;
    // One statement, keys in order: concurrent writers (a lock handed over mid-minute) cannot deadlock.
    const sorted = [...rows].sort((a, b) => a.databaseId.localeCompare(b.databaseId) || a.minute.getTime() - b.minute.getTime());
    await this.execute(
      `insert into observer_minutes (database_id, minute, statements, cpu_ms)
       values ${sorted.map(() => '(?, ?, ?::bigint, ?::double precision)').join(', ')}
       on conflict (database_id, minute) do update set
         statements = case when excluded.statements is null then observer_minutes.statements
                           else coalesce(observer_minutes.statements, 0) + excluded.statements end,
         cpu_ms = case when excluded.cpu_ms is null then observer_minutes.cpu_ms
                       else coalesce(observer_minutes.cpu_ms, 0) + excluded.cpu_ms end`,
      sorted.flatMap((row) => [row.databaseId, row.minute, row.statements, row.cpuMs]),
    );
  }
}
