import { deleteClient, listClients, registerClient, rotateClientSecret, type OAuthClient, type OAuthClientType } from '@platform/domain';
import { defineRoute, respond, arrayOf, dateTime, oneOf, optional, record, text } from '@platform/http';
import type { ManagementScope } from './management-scope.js';
import { workspaceSlugParam } from './common.js';

const clientFields = {
  client_id: text({ max: 64 }),
  name: text({ max: 100 }),
  type: oneOf(['confidential', 'public'], 'confidential: has a secret (servers); public: none (command-line tools, loopback redirects)'),
  redirect_uris: arrayOf(text({ max: 2048 })),
  created: dateTime(),
};
const ClientSchema = record(clientFields, 'An OAuth client of the workspace');
const ClientWithSecretSchema = record(
  { ...clientFields, client_secret: text({ max: 128, description: 'Shown this once; store it now. Only its digest is kept.' }) },
  'A confidential client with its new secret',
);
const NewClientSchema = record(
  { ...clientFields, client_secret: optional(text({ max: 128, description: 'Confidential clients only; shown this once' })) },
  'The registered client',
);

function presentClient(client: OAuthClient) {
  return {
    client_id: client.id,
    name: client.name,
    type: client.type,
    redirect_uris: client.redirectUris,
    created: client.created.toISOString(),
  };
}

const W = '/workspaces/{workspaceSlug}';
const WorkspacePath = record({ workspaceSlug: workspaceSlugParam });
const ClientPath = record({ workspaceSlug: workspaceSlugParam, clientId: text({ min: 1, max: 64 }) });
type ClientPathParams = { workspaceSlug: string; clientId: string };
/** Client management is for people: a client's own token cannot mint more clients. */
const PEOPLE_ONLY = 'Developers only: a client token answers 403 developer_token_required.';

export const clientRoutes = [
  defineRoute<ManagementScope, { workspaceSlug: string }, undefined, { name: string; type: OAuthClientType; redirect_uris?: string[] }>({
    method: 'POST',
    path: `${W}/oauth-clients`,
    operationId: 'registerClient',
    summary: 'Register an OAuth client for the workspace',
    description:
      `${PEOPLE_ONLY} A confidential client gets a 256-bit secret, shown in this response only. Redirect URIs are matched ` +
      'exactly; a public client may only use loopback http URIs (RFC 8252), a confidential one https or loopback http.',
    tags: ['oauth clients'],
    auth: 'management',
    params: WorkspacePath,
    body: record({
      name: text({ min: 1, max: 100 }),
      type: oneOf(['confidential', 'public']),
      redirect_uris: optional(arrayOf(text({ min: 1, max: 2048 }))),
    }),
    success: { status: 201, description: 'Registered', schema: NewClientSchema },
    errors: [404],
    handler: async ({ params, body, caller, scope }) => {
      const { client, secret } = await registerClient({ ...scope.repos, secrets: scope.secrets }, caller, params.workspaceSlug, {
        name: body.name,
        type: body.type,
        redirectUris: body.redirect_uris ?? [],
      });
      return respond({
        status: 201,
        body: { ...presentClient(client), ...(secret ? { client_secret: secret } : {}) },
        headers: { 'Cache-Control': 'no-store' },
      });
    },
  }),
  defineRoute<ManagementScope, { workspaceSlug: string }>({
    method: 'GET',
    path: `${W}/oauth-clients`,
    operationId: 'listClients',
    summary: 'List the workspace’s OAuth clients (never their secrets)',
    description: PEOPLE_ONLY,
    tags: ['oauth clients'],
    auth: 'management',
    params: WorkspacePath,
    success: { status: 200, description: 'Clients, oldest first', schema: arrayOf(ClientSchema) },
    errors: [404],
    handler: async ({ params, caller, scope }) =>
      (await listClients({ ...scope.repos, secrets: scope.secrets }, caller, params.workspaceSlug)).map(presentClient),
  }),
  defineRoute<ManagementScope, ClientPathParams>({
    method: 'POST',
    path: `${W}/oauth-clients/{clientId}/secret`,
    operationId: 'rotateClientSecret',
    summary: 'Replace a confidential client’s secret',
    description: `${PEOPLE_ONLY} The old secret stops working at once; the new one is shown in this response only.`,
    tags: ['oauth clients'],
    auth: 'management',
    params: ClientPath,
    success: { status: 200, description: 'The client with its new secret', schema: ClientWithSecretSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => {
      const { client, secret } = await rotateClientSecret({ ...scope.repos, secrets: scope.secrets }, caller, params.workspaceSlug, params.clientId);
      return respond({ status: 200, body: { ...presentClient(client), client_secret: secret }, headers: { 'Cache-Control': 'no-store' } });
    },
  }),
  defineRoute<ManagementScope, ClientPathParams>({
    method: 'DELETE',
    path: `${W}/oauth-clients/{clientId}`,
    operationId: 'deleteClient',
    summary: 'Delete an OAuth client',
    description: `${PEOPLE_ONLY} The client can no longer obtain tokens; tokens it holds expire on their own.`,
    tags: ['oauth clients'],
    auth: 'management',
    params: ClientPath,
    success: { status: 204, description: 'Deleted' },
    errors: [404],
    handler: async ({ params, caller, scope }) => {
      await deleteClient({ ...scope.repos, secrets: scope.secrets }, caller, params.workspaceSlug, params.clientId);
      return undefined;
    },
  }),
];
