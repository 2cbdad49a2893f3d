// The shapes of the public API's answers that the console reads (see /openapi.json).
export interface Workspace {
  id: string;
  name: string;
  slug: string;
}

export interface Database {
  id: string;
  name: string;
  status: string;
  region: string;
  expandable: boolean;
  dbHost: string;
  created: string;
}

export interface Credential {
  id: string;
  tenantId: string | null;
  created: string;
}

export interface NewCredential extends Omit<Credential, 'created'> {
  password: string;
  connectionUrl: string;
}

export interface Tenant {
  id: string;
  name?: string | null;
}

export interface User {
  id: string;
  email: string;
  name?: string | null;
}

export interface SsoProvider {
  id: string;
  provider: string;
  configUrl?: string;
  clientId?: string;
  emailDomains?: string[];
  redirectURI?: string;
  enabled?: boolean;
}

export interface ComputeType {
  id: string;
  computeSize: string;
}

export interface ComputeInstance {
  instanceId: string;
  instanceName: string;
  instanceType: ComputeType;
  desiredInstanceType: ComputeType;
  status: string;
  failure?: string | null;
  updated?: string;
}

export interface QueryPoint {
  timestamp: string;
  proxyQueriesPerSecond: number;
  observerP99LatencyMs: number;
}

export interface QueryPerformance {
  source: string;
  granularity: string;
  points: QueryPoint[];
}

/** Where a database's own routes are: /workspaces/{slug}/databases/{name}. */
export interface DatabaseRef {
  slug: string;
  name: string;
  id: string;
}
