import pg from 'pg';
import { cutQueriesAtDeadline } from '@platform/deadline';
import { isLocalPostgres } from './process-cpu.js';

/** One PostgreSQL server and what it is to the platform (`control plane`, the regions it serves). */
export interface NamedServer {
  url: string;
  names: string[];
}

/** Servers by address: one server named several times (the control plane's is every region's by default) is one entry. */
export function groupByServer(servers: readonly { name: string; url: string }[]): NamedServer[] {
  const grouped: NamedServer[] = [];
  for (const { name, url } of servers) {
    const known = grouped.find((server) => serverKey(server.url) === serverKey(url));
    if (known) known.names.push(name);
    else grouped.push({ url, names: [name] });
  }
  return grouped;
}

function serverKey(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port || '5432'}`;
}

/**
 * Where a server keeps its data (`data_directory`, which wants a superuser or
 * pg_read_all_settings), when it is a server of this machine (its backend is a local `postgres`
 * process); null when it runs elsewhere.
 */
export async function localDataDirectory(url: string, connectTimeoutMs: number): Promise<string | null> {
  const client = cutQueriesAtDeadline(new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs }));
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ dir: string; pid: number }>(`select pg_catalog.current_setting('data_directory') as dir, pg_catalog.pg_backend_pid() as pid`);
    return isLocalPostgres(rows[0].pid) ? rows[0].dir : null;
  } finally {
    await client.end().catch(() => {});
  }
}
