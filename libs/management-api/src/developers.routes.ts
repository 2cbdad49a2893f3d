import { acceptInvitation, currentDeveloper, declineInvitation, EMAIL_MAX_LENGTH, listMyInvitations, PERSON_NAME_MAX_LENGTH } from '@platform/domain';
import { PAGE_LINK_HEADER, arrayOf, nullable, pageQueryFields, pageRequest, pagedAnswer, record, text, uuid } from '@platform/http';
import { defineManagementRoute, PAGED } from './management-scope.js';
import { myInvitationPathParams } from './path-params.js';
import {
  ReceivedInvitationSchema,
  WorkspaceMemberSchema,
  WorkspaceSchema,
  presentMember,
  presentReceivedInvitation,
  presentWorkspace,
} from './workspace.presenter.js';

const DeveloperSchema = record(
  {
    id: uuid(),
    email: text({ max: EMAIL_MAX_LENGTH }),
    name: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
    workspaces: arrayOf(WorkspaceSchema, 'The workspaces this token reaches'),
  },
  'The signed-in developer',
);

const AcceptedInvitationSchema = record(
  { workspace: WorkspaceSchema, member: WorkspaceMemberSchema },
  'The workspace joined, and the signed-in developer’s membership of it',
);

/** The invitee's routes are theirs alone: another developer's invitation does not exist for them. */
const INVITEE_ONLY =
  'A developer’s token only (a client’s: 403 developer_token_required; one bound to a workspace: 403 ' +
  'workspace_bound_token). An invitation is for the developer whose email it names, case-insensitively; any other ' +
  'invitation, and an expired, revoked, declined or spent one, answers 404 invitation_not_found.';

export const developerRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: '/developers/me',
    operationId: 'currentDeveloper',
    summary: 'The signed-in developer and their workspaces',
    description:
      'Not in the SPEC: the API family’s command line tool reads it after signing in. A developer’s token only (a client’s: ' +
      '403 developer_token_required); a token bound to one workspace lists that workspace only.',
    tags: ['workspaces'],
    auth: 'management',
    success: { status: 200, description: 'The developer', schema: DeveloperSchema },
    errors: [],
    handler: async ({ caller, scope }) => {
      const { developer, workspaces } = await currentDeveloper(scope, caller);
      return { id: developer.id, email: developer.email, name: developer.name, workspaces: workspaces.map(presentWorkspace) };
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: '/developers/me/invitations',
    operationId: 'listMyInvitations',
    summary: 'The signed-in developer’s pending invitations',
    description: `Invitations to workspaces for the developer’s email, from any workspace. ${INVITEE_ONLY} ${PAGED}`,
    tags: ['workspaces'],
    auth: 'management',
    query: record(pageQueryFields),
    success: { status: 200, description: 'A page of pending invitations, earliest first', schema: arrayOf(ReceivedInvitationSchema), headers: PAGE_LINK_HEADER },
    errors: [403],
    handler: async (input) => pagedAnswer(await listMyInvitations(input.scope, input.caller, pageRequest(input.query)), presentReceivedInvitation, input),
  }),
  defineManagementRoute({
    method: 'POST',
    path: '/developers/me/invitations/{invitationId}/accept',
    operationId: 'acceptInvitation',
    summary: 'Accept an invitation: join its workspace',
    description:
      `${INVITEE_ONLY} The developer joins as a member (invitations never make owners) and reaches the workspace at ` +
      'once; the invitation is spent. A developer who is a member already keeps their role.',
    tags: ['workspaces'],
    auth: 'management',
    params: myInvitationPathParams,
    success: { status: 200, description: 'The workspace joined', schema: AcceptedInvitationSchema },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      const { workspace, member } = await acceptInvitation(scope, caller, params.invitationId);
      return { workspace: presentWorkspace(workspace), member: presentMember(member) };
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: '/developers/me/invitations/{invitationId}/decline',
    operationId: 'declineInvitation',
    summary: 'Decline an invitation',
    description: `${INVITEE_ONLY} The invitation is gone; an owner may invite the email again.`,
    tags: ['workspaces'],
    auth: 'management',
    params: myInvitationPathParams,
    success: { status: 204, description: 'Declined' },
    errors: [403, 404],
    handler: async ({ params, caller, scope }) => {
      await declineInvitation(scope, caller, params.invitationId);
      return undefined;
    },
  }),
];
