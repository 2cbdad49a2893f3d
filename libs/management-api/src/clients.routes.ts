import { deleteClient, listClients, registerClient, rotateClientSecret, byCreated } from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, respond, arrayOf, oneOf, optional, record, text } from '@platform/http';
import {
  CLIENT_NAME_MAX_LENGTH,
  CLIENT_TYPES,
  ClientSchema,
  ClientWithSecretSchema,
  NewClientSchema,
  REDIRECT_URI_MAX_LENGTH,
  presentClient,
  presentClientWithSecret,
} from './client.presenter.js';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { pagedList } from './paged-list.js';
import { WORKSPACE_PATH, clientPathParams, workspacePathParams } from './path-params.js';

const RegisterClientRequest = record({
  name: text({ min: 1, max: CLIENT_NAME_MAX_LENGTH }),
  type: oneOf(CLIENT_TYPES),
  redirect_uris: optional(arrayOf(text({ min: 1, max: REDIRECT_URI_MAX_LENGTH }))),
});
/** Client management is for people: a client's own token cannot mint more clients. */
const PEOPLE_ONLY = 'Developers only: a client token answers 403 developer_token_required.';
const OWNERS_ONLY = 'Owners of the workspace only: a plain member answers 403 owner_required, a client token 403 developer_token_required.';
/** A response that carries a secret must not be stored by any cache on the way. */
const NO_STORE = { 'Cache-Control': 'no-store' };

export const clientRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${WORKSPACE_PATH}/oauth-clients`,
    operationId: 'registerClient',
    summary: 'Register an OAuth client for the workspace',
    description:
      `${OWNERS_ONLY} A confidential client gets a 256-bit secret, shown in this response only. Redirect URIs are matched ` +
      'exactly; a public client may only use loopback http URIs (RFC 8252), a confidential one https or loopback http.',
    tags: ['oauth clients'],
    auth: 'management',
    params: workspacePathParams,
    body: RegisterClientRequest,
    success: { status: 201, description: 'Registered', schema: NewClientSchema },
    errors: [403, 404],
    handler: async ({ params, body, caller, scope }) => {
      const { client, secret } = await registerClient(scope, caller, params.workspaceSlug, {
        name: body.name,
        type: body.type,
        redirectUris: body.redirect_uris ?? [],
      });
      return respond({ status: 201, body: presentClientWithSecret(client, secret), headers: NO_STORE });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/oauth-clients`,
    operationId: 'listClients',
    summary: 'List the workspace’s OAuth clients (never their secrets)',
    description: `${PEOPLE_ONLY} ${PAGED}`,
    tags: ['oauth clients'],
    auth: 'management',
    params: workspacePathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of clients, oldest first', schema: arrayOf(ClientSchema), headers: PAGE_LINK_HEADER },
    errors: [403, 404],
    handler: async (input) => pagedList(await listClients(input.scope, input.caller, input.params.workspaceSlug), input, byCreated, presentClient),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${WORKSPACE_PATH}/oauth-clients/{clientId}/secret`,
    operationId: 'rotateClientSecret',
    summary: 'Replace a confidential client’s secret',
    description: `${OWNERS_ONLY} The old secret stops working at once; the new one is shown in this response only.`,
    tags: ['oauth clients'],
    auth: 'management',
    params: clientPathParams,
    success: { status: 200, description: 'The client with its new secret', schema: ClientWithSecretSchema },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      const { client, secret } = await rotateClientSecret(scope, caller, params.workspaceSlug, params.clientId);
      return respond({ status: 200, body: presentClientWithSecret(client, secret), headers: NO_STORE });
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${WORKSPACE_PATH}/oauth-clients/{clientId}`,
    operationId: 'deleteClient',
    summary: 'Delete an OAuth client',
    description: `${OWNERS_ONLY} The client can no longer obtain tokens; tokens it holds expire on their own.`,
    tags: ['oauth clients'],
    auth: 'management',
    params: clientPathParams,
    success: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      await deleteClient(scope, caller, params.workspaceSlug, params.clientId);
      return undefined;
    },
  }),
];
