import { WORKSPACE_SLUG_MAX_LENGTH, WORKSPACE_SLUG_MIN_LENGTH, WORKSPACE_SLUG_PATTERN, createWorkspace, getWorkspace, listRegions, listWorkspaces, REGIONS } from '@platform/domain';
import { defineRoute, respond } from '../route.js';
import { arrayOf, oneOf, optional, record, text } from '../schema.js';
import type { ApiScope } from './api-scope.js';
import { workspaceSlugParam } from './common.js';
import { WorkspaceSchema, presentWorkspace } from './presenters.js';

const CreateWorkspaceRequest = record({
  name: text({ min: 1, max: 100, description: 'Display name' }),
  slug: optional(
    text({
      min: WORKSPACE_SLUG_MIN_LENGTH,
      max: WORKSPACE_SLUG_MAX_LENGTH,
      pattern: WORKSPACE_SLUG_PATTERN,
      description: 'Used in paths; derived from the name when omitted. Unique across the platform',
    }),
  ),
});
const WorkspaceParams = record({ workspaceSlug: workspaceSlugParam });

export const workspaceRoutes = [
  defineRoute<ApiScope, undefined, undefined, { name: string; slug?: string }>({
    method: 'POST',
    path: '/workspaces',
    operationId: 'createWorkspace',
    summary: 'Create a workspace owned by the caller',
    tags: ['workspaces'],
    auth: 'management',
    body: CreateWorkspaceRequest,
    success: { status: 201, description: 'Created', schema: WorkspaceSchema },
    errors: [409],
    handler: async ({ body, caller, scope }) => {
      const workspace = await createWorkspace(scope.repos, caller, body);
      return respond({ status: 201, body: presentWorkspace(workspace), headers: { Location: `/workspaces/${workspace.slug}` } });
    },
  }),
  defineRoute<ApiScope>({
    method: 'GET',
    path: '/workspaces',
    operationId: 'listWorkspaces',
    summary: 'List the workspaces the caller belongs to',
    tags: ['workspaces'],
    auth: 'management',
    success: { status: 200, description: 'The caller’s workspaces', schema: arrayOf(WorkspaceSchema) },
    errors: [],
    handler: async ({ caller, scope }) => (await listWorkspaces(scope.repos, caller)).map(presentWorkspace),
  }),
  defineRoute<ApiScope, { workspaceSlug: string }>({
    method: 'GET',
    path: '/workspaces/{workspaceSlug}',
    operationId: 'getWorkspace',
    summary: 'Get a workspace',
    tags: ['workspaces'],
    auth: 'management',
    params: WorkspaceParams,
    success: { status: 200, description: 'The workspace', schema: WorkspaceSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => presentWorkspace(await getWorkspace(scope.repos, caller, params.workspaceSlug)),
  }),
  defineRoute<ApiScope, { workspaceSlug: string }>({
    method: 'GET',
    path: '/workspaces/{workspaceSlug}/regions',
    operationId: 'listRegions',
    summary: 'List the regions this platform serves',
    description: 'The regions configured with PLATFORM_REGIONS; a database can be created in any of them.',
    tags: ['workspaces'],
    auth: 'management',
    params: WorkspaceParams,
    success: { status: 200, description: 'Region names', schema: arrayOf(oneOf(REGIONS)) },
    errors: [404],
    handler: async ({ params, caller, scope }) => [...(await listRegions({ ...scope.repos, ...scope }, caller, params.workspaceSlug))],
  }),
];
