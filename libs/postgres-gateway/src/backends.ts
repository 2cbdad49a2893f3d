// Which PostgreSQL server a session goes to, decided here and nowhere else: a database on its own
// compute instance is on that instance's server, any other on its region's cluster. The same
// choice, read backwards, sends a cancel request to the server whose slot its key carries.
import { INSTANCE_CANCEL_SLOTS, regionId, type ConnectionRoute, type ConnectionRoutes, type Region } from '@platform/domain';

/** A PostgreSQL server the gateway sends sessions to, and its slot in the cancel keys it hands out. */
export interface Backend {
  host: string;
  port: number;
  index: number;
}

/** A region's cluster as the gateway reaches it, from the cluster's URL: the region's number is its slot. */
export function regionBackend(region: Region, clusterUrl: string): Backend {
  const url = new URL(clusterUrl);
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 5432), index: regionId(region) };
}

/**
 * The server of a route's database. A compute instance's sessions carry its cancel slot (0 when it
 * has none: a cancel for them is dropped); a region's cluster is the one of `clusters` whose slot
 * is the region's number.
 */
export function backendForRoute(route: ConnectionRoute, clusters: readonly Backend[]): Backend {
  const server = route.database.server;
  if (server) return { host: server.host, port: server.port, index: route.cancelSlot ?? 0 };
  const slot = regionId(route.database.region);
  const cluster = clusters.find((candidate) => candidate.index === slot);
  if (!cluster) throw new Error(`the gateway has no cluster for region ${route.database.region}`);
  return cluster;
}

/** The server a cancel key's slot names: a region's cluster, or (from the instances' first slot on) a live compute instance's. */
export async function backendAtSlot(slot: number, clusters: readonly Backend[], routes: Pick<ConnectionRoutes, 'findInstanceBySlot'>): Promise<Backend | undefined> {
  const cluster = clusters.find((candidate) => candidate.index === slot);
  if (cluster || slot < INSTANCE_CANCEL_SLOTS.first) return cluster;
  const server = await routes.findInstanceBySlot(slot).catch(() => null);
  return server ? { ...server, index: slot } : undefined;
}
