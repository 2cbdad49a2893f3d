import { CLIENT_ID_MAX_LENGTH, ROLE_NAME_MAX_LENGTH } from '@platform/domain';
import { record, text, uuid } from '@platform/http';

// Path parameters are bounded but not held to the naming rules: a value that cannot exist
// answers 404 after the lookup, like one that does not exist.
const workspaceSlug = text({ min: 1, max: 100, description: 'The workspace slug' });
const databaseName = text({ min: 1, max: 100, description: 'The database name' });
const tenantId = uuid('The tenant id');
const userId = uuid('The user id');

export const WORKSPACE_PATH = '/workspaces/{workspaceSlug}';
export const DATABASE_PATH = `${WORKSPACE_PATH}/databases/{databaseName}`;
export const TENANT_PATH = `${DATABASE_PATH}/tenants/{tenantId}`;
/** A deleted database, by id: its name may be another database's since. */
export const DELETED_DATABASE_PATH = `${WORKSPACE_PATH}/databases/{databaseId}`;

export const workspacePathParams = record({ workspaceSlug });
export const memberPathParams = record({ workspaceSlug, developerId: uuid('The member’s developer id') });
export const invitationPathParams = record({ workspaceSlug, invitationId: uuid('The invitation id') });
export const myInvitationPathParams = record({ invitationId: uuid('The invitation id') });
export const clientPathParams = record({ workspaceSlug, clientId: text({ min: 1, max: CLIENT_ID_MAX_LENGTH }) });
export const databasePathParams = record({ workspaceSlug, databaseName });
export const deletedDatabasePathParams = record({
  workspaceSlug,
  databaseId: text({ min: 1, max: 100, description: 'The deleted database’s id (DELETE D answered it; the list with deleted=true shows it)' }),
});
export const tenantPathParams = record({ workspaceSlug, databaseName, tenantId });
export const userInDatabasePathParams = record({ workspaceSlug, databaseName, userId });
export const userInTenantPathParams = record({ workspaceSlug, databaseName, tenantId, userId });
export const credentialPathParams = record({
  workspaceSlug,
  databaseName,
  credentialId: text({ min: 1, max: ROLE_NAME_MAX_LENGTH, description: 'The credential id (its role name)' }),
});
export const computeInstancePathParams = record({ workspaceSlug, databaseName, instanceId: uuid('The compute instance id') });
