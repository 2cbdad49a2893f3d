// The pooled endpoint's privileged session (README "Privileged sessions"): the gateway reads a
// credential role's SCRAM verifier from its region's cluster, as the cluster's administrator, in the
// cluster's maintenance database, with the connection limits of the role and of its database (what
// sizes its pool). One statement, on the shared system catalog alone, with every name qualified: no
// object a customer can create (they have none in that database) is ever resolved.
import pg from 'pg';
import type { Region } from '@platform/domain';
import { regionBackend, type Backend, type RoleCatalogEntry, type VerifierSource } from '@platform/postgres-gateway';

/** At most this many administrator sessions per cluster at once. */
const SESSIONS_PER_CLUSTER = 2;

export class ClusterVerifiers implements VerifierSource {
  private readonly admins = new Map<string, pg.Pool>();

  constructor(clusterUrls: Record<Region, string>, regions: readonly Region[], connectTimeoutMs: number) {
    for (const region of regions) {
      const backend = regionBackend(region, clusterUrls[region]);
      const key = `${backend.host}:${backend.port}`;
      if (this.admins.has(key)) continue;
      const admin = new pg.Pool({
        connectionString: clusterUrls[region],
        max: SESSIONS_PER_CLUSTER,
        idleTimeoutMillis: 10_000,
        connectionTimeoutMillis: connectTimeoutMs,
        application_name: 'platform gateway: pooled logins',
        // Nothing of the search path is used, but nothing unexpected can be found there either.
        options: '-c search_path=pg_catalog',
      });
      admin.on('error', () => {});
      this.admins.set(key, admin);
    }
  }

  /**
   * The role's verifier and connection limits on the cluster `backend` is (with `physicalName`'s),
   * or null for a server the gateway has no administrator of (a compute instance) or a role not there.
   */
  async find(backend: Backend, role: string, physicalName: string): Promise<RoleCatalogEntry | null> {
    const admin = this.admins.get(`${backend.host}:${backend.port}`);
    if (!admin) return null;
    const { rows } = await admin.query<{ rolpassword: string | null; rolconnlimit: number; datconnlimit: number | null }>(
      `select a.rolpassword, a.rolconnlimit, d.datconnlimit
         from pg_catalog.pg_authid a
         left join pg_catalog.pg_database d on d.datname operator(pg_catalog.=) $2
        where a.rolname operator(pg_catalog.=) $1`,
      [role, physicalName],
    );
    const [row] = rows;
    return row ? { verifier: row.rolpassword, roleConnectionLimit: row.rolconnlimit, databaseConnectionLimit: row.datconnlimit } : null;
  }

  async close(): Promise<void> {
    await Promise.all([...this.admins.values()].map((admin) => admin.end()));
  }
}
