import { randomBytes } from 'node:crypto';
import { requireManagement } from '../authorization.js';
import type { Credential, CredentialRepository, LoginRoles } from '../credential-ports.js';
import { ConflictError, NotFoundError, UnavailableError } from '../errors.js';
import type { Database, Principal } from '../model.js';
import type { DatabasePath } from '../paths.js';
import { accessDatabase, type DataPlaneDeps } from './database-access.js';
import { getDatabase } from './databases.js';
import { tenantNotFound } from './membership.js';

export interface CredentialDeps extends DataPlaneDeps {
  credentials: CredentialRepository;
  loginRoles: LoginRoles;
  /** Live credentials developers may hold per database (CREDENTIALS_PER_DATABASE); each is a role on a shared cluster. */
  credentialsPerDatabase: number;
}

/** The credentials of one database, with the database they log in to. */
export interface DatabaseCredentials {
  database: Database;
  credentials: Credential[];
}

/**
 * Roles are cluster-wide: one created or dropped on the server a database is leaving, while its
 * roles are copied, would be missed. Credentials wait for the move (a few seconds).
 */
function assertNotMoving(database: Database): void {
  if (database.moving) {
    throw new UnavailableError('database_moving', `Database '${database.name}' is moving to another server; try again in a few seconds`);
  }
}

/*
 * Credentials are for the people who run the database (developers, and their workspaces'
 * clients): a user token is refused with 403 whatever it addresses.
 */

/**
 * Creates a login role on the database's cluster, then records it, within the database's quota
 * (409 `credential_quota_exceeded` at it, nothing created): counted, created and recorded under
 * one lock, so two concurrent creates at the quota cannot both pass. The password is shown once:
 * the cluster keeps only a SCRAM verifier and the control plane nothing of it.
 */
export async function createCredential(
  deps: CredentialDeps,
  caller: Principal,
  path: DatabasePath,
  input: { tenantId?: string },
): Promise<{ database: Database; credential: Credential; password: string }> {
  const manager = requireManagement(caller);
  const { database, data } = await accessDatabase(deps, manager, path);
  assertNotMoving(database);
  const tenantId = input.tenantId ?? null;
  if (tenantId !== null && !(await data.tenants.find(tenantId))) throw tenantNotFound(tenantId);
  // 256 random bits: guessing is hopeless, so no slow hash is needed anywhere on the way.
  const password = randomBytes(32).toString('base64url');
  let id: string | undefined;
  try {
    const credential = await deps.credentials.createCounted(database.id, async (live, record) => {
      if (live >= deps.credentialsPerDatabase) {
        throw new ConflictError(
          'credential_quota_exceeded',
          `Database '${database.name}' has ${live} credentials, its quota is ${deps.credentialsPerDatabase}; delete one first`,
        );
      }
      id = await deps.loginRoles.createLoginRole(database, { password, tenantId });
      return record({ id, tenantId, internal: false });
    });
    return { database, credential, password };
  } catch (error) {
    // A role nobody knows of must not keep logging in; the recording error is the one to report.
    if (id !== undefined) await deps.loginRoles.dropLoginRole(database, id).catch(() => undefined);
    throw error;
  }
}

/** Live credentials of a database; `internal` picks the platform's own or the developer's. */
export async function listCredentials(
  deps: CredentialDeps,
  caller: Principal,
  path: DatabasePath,
  filter: { tenantId?: string; internal: boolean },
): Promise<DatabaseCredentials> {
  const database = await getDatabase(deps, requireManagement(caller), path.workspaceSlug, path.databaseName);
  return { database, credentials: await deps.credentials.listForDatabase(database.id, filter) };
}

/** Drops the role (ending its sessions) before forgetting it, so a failed drop can be retried. */
export async function deleteCredential(deps: CredentialDeps, caller: Principal, path: DatabasePath, id: string): Promise<void> {
  const database = await getDatabase(deps, requireManagement(caller), path.workspaceSlug, path.databaseName);
  const credential = await deps.credentials.find(database.id, id);
  if (!credential) throw new NotFoundError('credential_not_found', `Credential '${id}' not found`);
  assertNotMoving(database);
  await deps.loginRoles.dropLoginRole(database, credential.id);
  await deps.credentials.markDeleted(database.id, credential.id);
}

/**
 * Drops the tenant's scoped credentials: a tenant that goes takes its credentials with it (their
 * sessions end), not only their view of its rows.
 */
export async function endTenantCredentials(
  deps: Pick<CredentialDeps, 'credentials' | 'loginRoles'>,
  database: Database,
  tenantId: string,
): Promise<void> {
  assertNotMoving(database);
  for (const internal of [false, true]) {
    for (const credential of await deps.credentials.listForDatabase(database.id, { tenantId, internal })) {
      await deps.loginRoles.dropLoginRole(database, credential.id);
      await deps.credentials.markDeleted(database.id, credential.id);
    }
  }
}
