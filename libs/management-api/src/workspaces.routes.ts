import {
  INVITATION_TTL_DAYS,
  INVITATIONS_PER_WORKSPACE,
  REGIONS,
  changeMemberRole,
  createWorkspace,
  getWorkspace,
  inviteMember,
  listInvitations,
  listMembers,
  listRegions,
  listWorkspaces,
  removeMember,
  revokeInvitation,
  byCreated,
} from '@platform/domain';
import { PAGE_LINK_HEADER, pageQueryFields, respond, arrayOf, oneOf, optional, record } from '@platform/http';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { pagedList } from './paged-list.js';
import { WORKSPACE_PATH, invitationPathParams, memberPathParams, workspacePathParams } from './path-params.js';
import { emailField, workspaceNameField, workspaceSlugField } from './request-fields.js';
import {
  InvitationSchema,
  InvitedRoleSchema,
  WorkspaceMemberSchema,
  WorkspaceRoleSchema,
  WorkspaceSchema,
  presentInvitation,
  presentMember,
  presentWorkspace,
} from './workspace.presenter.js';

const CreateWorkspaceRequest = record({
  name: workspaceNameField,
  slug: optional(workspaceSlugField('Used in paths; derived from the name when omitted. Unique across the platform')),
});
const InviteRequest = record({
  email: emailField('Who is invited: the developer with this email, matched case-insensitively, now or once they sign up'),
  role: optional(InvitedRoleSchema),
});
const ChangeRoleRequest = record({ role: WorkspaceRoleSchema });
/** Membership changes are for people: a client's token cannot grant access to its workspace. */
const OWNERS_ONLY =
  'Owners only: a member gets 403 owner_required, a client token 403 developer_token_required, and anyone outside the ' +
  'workspace 404 workspace_not_found.';
const KEEPS_AN_OWNER =
  'A workspace always keeps an owner: 409 last_owner when this would leave none. Membership changes of one workspace ' +
  'are serialized, so two owners demoting or removing each other at once leave one of them owner.';

export const workspaceRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: '/workspaces',
    operationId: 'createWorkspace',
    summary: 'Create a workspace owned by the caller',
    tags: ['workspaces'],
    auth: 'management',
    body: CreateWorkspaceRequest,
    description: 'A developer token bound to one workspace (issued to that workspace’s client) gets 403 workspace_bound_token.',
    success: { status: 201, description: 'Created', schema: WorkspaceSchema, headers: { Location: 'The new workspace' } },
    errors: [403, 409],
    handler: async ({ body, caller, scope }) => {
      const workspace = await createWorkspace(scope, caller, body);
      return respond({ status: 201, body: presentWorkspace(workspace), headers: { Location: `/workspaces/${workspace.slug}` } });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: '/workspaces',
    operationId: 'listWorkspaces',
    summary: 'List the workspaces the caller belongs to',
    description: `A token bound to one workspace (a client’s) lists that workspace only. ${PAGED}`,
    tags: ['workspaces'],
    auth: 'management',
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of the caller’s workspaces', schema: arrayOf(WorkspaceSchema), headers: PAGE_LINK_HEADER },
    errors: [],
    handler: async (input) => pagedList(await listWorkspaces(input.scope, input.caller), input, byCreated, presentWorkspace),
  }),
  defineManagementRoute({
    method: 'GET',
    path: WORKSPACE_PATH,
    operationId: 'getWorkspace',
    summary: 'Get a workspace',
    tags: ['workspaces'],
    auth: 'management',
    params: workspacePathParams,
    success: { status: 200, description: 'The workspace', schema: WorkspaceSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => presentWorkspace(await getWorkspace(scope, caller, params.workspaceSlug)),
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/regions`,
    operationId: 'listRegions',
    summary: 'List the regions this platform serves',
    description: 'The regions configured with PLATFORM_REGIONS; a database can be created in any of them.',
    tags: ['workspaces'],
    auth: 'management',
    params: workspacePathParams,
    success: { status: 200, description: 'Region names', schema: arrayOf(oneOf(REGIONS)) },
    errors: [404],
    handler: async ({ params, caller, scope }) => [...(await listRegions(scope, caller, params.workspaceSlug))],
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/members`,
    operationId: 'listMembers',
    summary: 'List the developers who belong to the workspace',
    description: `Open to every member and to the workspace’s OAuth clients. ${PAGED}`,
    tags: ['workspaces'],
    auth: 'management',
    params: workspacePathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of members, earliest first', schema: arrayOf(WorkspaceMemberSchema), headers: PAGE_LINK_HEADER },
    errors: [404],
    handler: async (input) =>
      pagedList(await listMembers(input.scope, input.caller, input.params.workspaceSlug), input, (member) => ({ at: member.added.getTime(), id: member.developerId }), presentMember),
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${WORKSPACE_PATH}/invitations`,
    operationId: 'inviteMember',
    summary: 'Invite an email to the workspace',
    description:
      `${OWNERS_ONLY} Nobody joins until invited: the developer with this email (case-insensitively, whether they ` +
      'have an account now or sign up later) sees the invitation at GET /developers/me/invitations and accepts or ' +
      `declines it. It expires after ${INVITATION_TTL_DAYS} days. The answer is the same for an email with an account ` +
      'and one without, so it tells nobody which emails are registered. Inviting an email again replaces its pending ' +
      'invitation (the older one stops working). 409 already_member when a member has this email: the member list ' +
      `shows that to every member already. A workspace has at most ${INVITATIONS_PER_WORKSPACE} pending invitations: past ` +
      'that, 409 invitation_quota_exceeded and nothing changes (inviting a pending email again still replaces its ' +
      'invitation); revoke one, or wait for answers or expiry. An invitation makes its invitee a `member`, never an ' +
      'owner: emails are not verified at sign-up, so it goes to whoever registered the email; promote the member with ' +
      'PATCH on the member once you know who it is. `role` may be omitted or `member`; `owner` is 400 validation_failed.',
    tags: ['workspaces'],
    auth: 'management',
    params: workspacePathParams,
    body: InviteRequest,
    success: { status: 201, description: 'The invitation', schema: InvitationSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) => {
      const invitation = await inviteMember(scope, caller, params.workspaceSlug, body);
      return respond({ status: 201, body: presentInvitation(invitation) });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${WORKSPACE_PATH}/invitations`,
    operationId: 'listInvitations',
    summary: 'List the workspace’s pending invitations',
    description: `${OWNERS_ONLY} Expired, accepted, declined and revoked invitations are not listed. ${PAGED}`,
    tags: ['workspaces'],
    auth: 'management',
    params: workspacePathParams,
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of pending invitations, earliest first', schema: arrayOf(InvitationSchema), headers: PAGE_LINK_HEADER },
    errors: [403, 404],
    handler: async (input) => pagedList(await listInvitations(input.scope, input.caller, input.params.workspaceSlug), input, byCreated, presentInvitation),
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${WORKSPACE_PATH}/invitations/{invitationId}`,
    operationId: 'revokeInvitation',
    summary: 'Revoke a pending invitation',
    description: `${OWNERS_ONLY} It can no longer be accepted. 404 invitation_not_found when the workspace has no pending invitation by that id.`,
    tags: ['workspaces'],
    auth: 'management',
    params: invitationPathParams,
    success: { status: 204, description: 'Revoked' },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      await revokeInvitation(scope, caller, params.workspaceSlug, params.invitationId);
      return undefined;
    },
  }),
  defineManagementRoute({
    method: 'PATCH',
    path: `${WORKSPACE_PATH}/members/{developerId}`,
    operationId: 'changeMemberRole',
    summary: 'Change a member’s role',
    description:
      `${OWNERS_ONLY} An owner may change their own role too. ${KEEPS_AN_OWNER} Setting the role a member has already ` +
      'changes nothing. 404 member_not_found when the developer does not belong to the workspace.',
    tags: ['workspaces'],
    auth: 'management',
    params: memberPathParams,
    body: ChangeRoleRequest,
    success: { status: 200, description: 'The member with their role', schema: WorkspaceMemberSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, scope }) =>
      presentMember(await changeMemberRole(scope, caller, params.workspaceSlug, params.developerId, body.role)),
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${WORKSPACE_PATH}/members/{developerId}`,
    operationId: 'removeMember',
    summary: 'Remove a member from the workspace, or leave it',
    description:
      'Owners remove anyone; any member may remove themself (leave); a member removing someone else gets 403 ' +
      `owner_required, a client token 403 developer_token_required. ${KEEPS_AN_OWNER} The removed developer loses ` +
      'the workspace at once: their next request answers 404 workspace_not_found. OAuth clients they registered stay ' +
      'with the workspace. 404 member_not_found when the developer does not belong to the workspace.',
    tags: ['workspaces'],
    auth: 'management',
    params: memberPathParams,
    success: { status: 204, description: 'Removed' },
    errors: [403, 404, 409],
    handler: async ({ params, caller, scope }) => {
      await removeMember(scope, caller, params.workspaceSlug, params.developerId);
      return undefined;
    },
  }),
];
