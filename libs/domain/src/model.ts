import type { ServerAddress } from './compute/compute-instances.js';
import type { DatabaseStatus } from './database-status.js';
import type { Region } from './regions.js';

export interface Developer {
  id: string;
  email: string;
  name: string | null;
  created: Date;
}

export interface Workspace {
  id: string;
  name: string;
  slug: string;
  /** The workspace's id in a billing system; null while no billing system is attached. */
  billingCustomerId: string | null;
  created: Date;
}

export interface Database {
  id: string;
  workspace: Workspace;
  name: string;
  region: Region;
  status: DatabaseStatus;
  /** The database's name on its PostgreSQL cluster; fixed at creation, so renames are metadata only. */
  physicalName: string;
  created: Date;
  updated: Date;
  deleted: Date | null;
  /** The database's live dedicated compute instance, whatever its status; null or absent when none. */
  instanceId?: string | null;
  /** Where the database is served when that is its dedicated instance's server, not its region's cluster. */
  server?: ServerAddress | null;
  /** Its data is moving between servers now (onto its instance, or back). */
  moving?: boolean;
  /**
   * Since when the server that holds it now has held its data (built there, or moved there): its
   * backups reach no further back for this database. Null or absent before it is built.
   */
  servedSince?: Date | null;
  /** A restore or branch that cannot be made: why (shown as FAILED); null or absent otherwise. */
  failure?: string | null;
  /** A restore or branch: made from this database's backups, holding its data as of `at`; null or absent otherwise. */
  source?: DatabaseSource | null;
}

/** Where a restored or branched database's data came from. */
export interface DatabaseSource {
  databaseId: string;
  /** The instant of the source's data it holds: every transaction committed by then, none after. */
  at: Date;
}

/** Who is calling. Developer tokens see the workspaces their developer belongs to. */
export interface DeveloperPrincipal {
  kind: 'developer';
  developerId: string;
  scopes: readonly string[];
  /** Set when the token was issued to a workspace's own client: it reaches that workspace only. */
  workspaceId?: string;
  /** The refresh-token family the token came from; revoking the family ends the token. */
  familyId?: string;
}

/** A user of one platform database, signed in through one session. */
export interface UserPrincipal {
  kind: 'user';
  userId: string;
  databaseId: string;
  /** The server-side session the token belongs to: revoking it ends the token at once. */
  sessionId: string;
}

/** An OAuth client acting for its workspace (client_credentials): it reaches that workspace only. */
export interface ClientPrincipal {
  kind: 'client';
  clientId: string;
  workspaceId: string;
  scopes: readonly string[];
}

export type Principal = DeveloperPrincipal | UserPrincipal | ClientPrincipal;

/** The principals that manage workspaces and databases: developers and their workspaces' clients. */
export type ManagementPrincipal = DeveloperPrincipal | ClientPrincipal;

export type OAuthClientType = 'confidential' | 'public';

export interface OAuthClient {
  id: string;
  /** null for the platform's own (first-party) clients, such as the command-line client. */
  workspaceId: string | null;
  name: string;
  type: OAuthClientType;
  redirectUris: string[];
  created: Date;
}

export interface Tenant {
  id: string;
  name: string | null;
  created: Date;
  updated: Date;
}

export interface User {
  id: string;
  email: string;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
  picture: string | null;
  emailVerified: Date | null;
  created: Date;
  updated: Date;
}

/** What a successful login or sign-up hands back (SPEC LoginUserResponse, plus the session). */
export interface LoginResult {
  user: User;
  tenantIds: string[];
  token: { jwt: string; maxAge: number; type: 'ACCESS_TOKEN' };
  session: { token: string; maxAge: number };
}

/** The physical database name for a platform database id: stable, unique, never user-chosen. */
export function physicalDatabaseName(databaseId: string): string {
  return `db_${databaseId.replace(/-/g, '')}`;
}
