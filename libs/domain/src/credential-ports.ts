import type { Database } from './model.js';

/** A credential's id is its PostgreSQL role name: an identifier of at most 63 bytes. */
export const ROLE_NAME_MAX_LENGTH = 63;

/** What every credential's role name starts with; SQL that looks for credentials' roles takes it as a parameter. */
export const CREDENTIAL_ROLE_PREFIX = 'cred_';

/** Every credential's role is CREDENTIAL_ROLE_PREFIX and 20 lowercase base32 characters (100 random bits). */
export const CREDENTIAL_ROLE_NAME = new RegExp(`^${CREDENTIAL_ROLE_PREFIX}[a-z2-7]{20}$`);

/** A PostgreSQL role that logs in to one database; its id is the role's name. */
export interface Credential {
  id: string;
  databaseId: string;
  /** The tenant whose rows alone the credential sees; null for one that sees every tenant. */
  tenantId: string | null;
  /** Held by the platform itself (such as a gateway) rather than handed to a developer. */
  internal: boolean;
  created: Date;
}

/** The control plane's record of credentials; the roles themselves live on the clusters. */
export interface CredentialRepository {
  create(input: { id: string; databaseId: string; tenantId: string | null; internal: boolean }): Promise<Credential>;
  /** Live credentials of the database, oldest first; only the tenant's when `tenantId` is given. */
  listForDatabase(databaseId: string, filter: { tenantId?: string; internal: boolean }): Promise<Credential[]>;
  /** A live credential of that database only. */
  find(databaseId: string, id: string): Promise<Credential | null>;
  markDeleted(databaseId: string, id: string): Promise<void>;
  /**
   * Creates credentials of one database one at a time: runs `create` holding the database's
   * lock in one control-plane transaction, given the number of live credentials developers made
   * for it (internal ones are not counted); what `record` writes commits with it. Concurrent
   * calls for one database wait for each other, so a count checked in `create` stays true.
   */
  createCounted<T>(databaseId: string, create: (live: number, record: (input: NewCredential) => Promise<Credential>) => Promise<T>): Promise<T>;
}

export interface NewCredential {
  id: string;
  tenantId: string | null;
  internal: boolean;
}

/** Login roles on the cluster that holds a database. */
export interface LoginRoles {
  /**
   * Creates a role that logs in to the database with the password and answers its name. A role
   * with a tenant sees only that tenant's rows; NotFoundError `tenant_not_found` when the tenant
   * does not exist.
   */
  createLoginRole(database: Database, input: { password: string; tenantId: string | null }): Promise<string>;
  /** Ends the role's sessions and drops it; dropping a role that is gone does nothing. */
  dropLoginRole(database: Database, roleName: string): Promise<void>;
}

/** What a PostgreSQL gateway needs to route a login: the credential and the database it reaches. */
export interface ConnectionRoute {
  credentialId: string;
  /** The tenant the credential is bound to; null for one that sees every tenant. */
  tenantId: string | null;
  /** `server`: the database's dedicated compute instance's, when it is served there. */
  database: Pick<Database, 'id' | 'name' | 'physicalName' | 'region' | 'status' | 'server'>;
  /** The database's data is moving between servers now: a login waits for the move to finish. */
  moving?: boolean;
  /** With `database.server`: the instance's cancel slot, which its sessions' cancel keys carry; null when it has none. */
  cancelSlot?: number | null;
  /**
   * Sessions the credential's logins may hold on the database's server, when the control plane
   * knows it: a compute instance's, its type's maxConnections. Null or absent on a region's
   * cluster, whose catalog holds it (the database's and the role's CONNECTION LIMIT).
   */
  connectionLimit?: number | null;
}

/** Live credentials by role name, for the gateway. */
export interface ConnectionRoutes {
  /** The route of a live credential of a live database; null otherwise. */
  find(roleName: string): Promise<ConnectionRoute | null>;
  /** Where the live compute instance with this cancel slot listens, for a cancel request; null when none has it. */
  findInstanceBySlot(slot: number): Promise<{ host: string; port: number } | null>;
}
