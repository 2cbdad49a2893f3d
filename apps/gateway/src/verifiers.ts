// The pooled endpoint's privileged session (README "Privileged sessions"): the gateway reads a
// credential role's SCRAM verifier from its region's cluster, as the cluster's administrator, in the
// cluster's maintenance database. One statement, on the system catalog alone, with every name
// qualified: no object a customer can create (they have none in that database) is ever resolved.
import pg from 'pg';
import type { Region } from '@platform/domain';
import { regionBackend, type Backend, type VerifierSource } from '@platform/postgres-gateway';

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

  /** The role's verifier on the cluster `backend` is, or null for a server the gateway has no administrator of (a compute instance). */
  async find(backend: Backend, role: string): Promise<string | null> {
    const admin = this.admins.get(`${backend.host}:${backend.port}`);
    if (!admin) return null;
    const { rows } = await admin.query<{ rolpassword: string | null }>('select rolpassword from pg_catalog.pg_authid where rolname operator(pg_catalog.=) $1', [role]);
    return rows[0]?.rolpassword ?? null;
  }

  async close(): Promise<void> {
    await Promise.all([...this.admins.values()].map((admin) => admin.end()));
  }
}
