import { createCredential, deleteCredential, listCredentials, byCreated } from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, respond, arrayOf, optional, queryBoolean, record, uuid } from '@platform/http';
import { CredentialSchema, NewCredentialSchema, presentCredential, presentNewCredential } from './credential.presenter.js';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { pagedList } from './paged-list.js';
import { DATABASE_PATH, credentialPathParams, databasePathParams } from './path-params.js';

const CREDENTIALS_PATH = `${DATABASE_PATH}/credentials`;

const CreateCredentialRequest = optional(
  record({ tenantId: optional(uuid('Scope the credential to this tenant: it sees only the tenant’s rows')) }, 'Optional: no body for an unscoped credential'),
);
const ListCredentialsQuery = record({
  tenantId: optional(uuid('Only the credentials scoped to this tenant')),
  internal: optional(queryBoolean('true: the platform’s own credentials; false (the default): those created through this API')),
  ...pageQueryFields,
});
/** A response that carries a password must not be stored by any cache on the way. */
const NO_STORE = { 'Cache-Control': 'no-store' };
const WHO = 'Developers and workspace clients only: a user token answers 403 developer_token_required.';

export const credentialRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: CREDENTIALS_PATH,
    operationId: 'createCredential',
    summary: 'Create a credential: a PostgreSQL role that logs in to the database',
    description:
      `${WHO} Not in the SPEC, which shows only the list. The database must be READY (409 database_not_ready). Without a ` +
      'body (or without `tenantId`) the credential sees every tenant and may create tables the database’s other ' +
      'credentials use; with `tenantId` it sees only that tenant’s rows of tenant-aware tables (404 tenant_not_found for ' +
      'an unknown tenant). A database holds a limited number of live credentials (the platform’s CREDENTIALS_PER_DATABASE, ' +
      '50 by default; each is a role on a shared cluster): past it, 409 credential_quota_exceeded and nothing is created; ' +
      'delete one to make room. The password (256 random bits) is shown in this response only; PostgreSQL keeps a SCRAM ' +
      'verifier and the platform nothing. `connectionUrl` is the database’s dbHost (the platform’s PostgreSQL gateway and the ' +
      'database’s name) with the credential and `sslmode=require`. `regionId` is the region’s position in ' +
      'AWS_US_WEST_2, AWS_EU_CENTRAL_1, AZURE_EASTUS, counted from 1.',
    tags: ['credentials'],
    auth: 'management',
    params: databasePathParams,
    body: CreateCredentialRequest,
    success: { status: 201, description: 'Created, with its password', schema: NewCredentialSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const { credential, password, database } = await createCredential(scope, caller, params, { tenantId: body?.tenantId });
      return respond({ status: 201, body: presentNewCredential(credential, password, database, scope), headers: NO_STORE });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: CREDENTIALS_PATH,
    operationId: 'listCredentials',
    summary: 'List the database’s credentials (never their passwords)',
    description: `${WHO} \`tenantId\` keeps only the credentials scoped to that tenant (an unknown tenant lists none). ${PAGED}`,
    tags: ['credentials'],
    auth: 'management',
    params: databasePathParams,
    query: ListCredentialsQuery,
    success: { status: 200, description: 'A page of credentials, oldest first', schema: arrayOf(CredentialSchema), headers: PAGE_LINK_HEADER },
    errors: [403, 404],
    handler: async (input) => {
      const filter = { tenantId: input.query.tenantId, internal: input.query.internal === true };
      const { database, credentials } = await listCredentials(input.scope, input.caller, input.params, filter);
      return pagedList(credentials, input, byCreated, (credential) => presentCredential(credential, database));
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${CREDENTIALS_PATH}/{credentialId}`,
    operationId: 'deleteCredential',
    summary: 'Delete a credential',
    description: `${WHO} The role is dropped: its open sessions end and it can no longer log in. Tables it created stay, owned by the database.`,
    tags: ['credentials'],
    auth: 'management',
    params: credentialPathParams,
    success: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      await deleteCredential(scope, caller, params, params.credentialId);
      return undefined;
    },
  }),
];
