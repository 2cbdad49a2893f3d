import {
  EMAIL_MAX_LENGTH,
  INVITED_ROLE,
  PERSON_NAME_MAX_LENGTH,
  WORKSPACE_NAME_MAX_LENGTH,
  WORKSPACE_ROLES,
  WORKSPACE_SLUG_MAX_LENGTH,
  type Workspace,
  type WorkspaceInvitation,
  type WorkspaceMember,
} from '@platform/domain';
import { dateTime, nullable, oneOf, record, text, uuid } from '@platform/http';

export const WorkspaceSchema = record(
  {
    id: uuid(),
    name: text({ max: WORKSPACE_NAME_MAX_LENGTH }),
    slug: text({ max: WORKSPACE_SLUG_MAX_LENGTH }),
    billing_customer_id: nullable(text({ max: 255, description: 'The workspace in the billing system; null while none is attached' })),
    created: dateTime(),
  },
  'A workspace',
);

export function presentWorkspace(workspace: Workspace) {
  return {
    id: workspace.id,
    name: workspace.name,
    slug: workspace.slug,
    billing_customer_id: workspace.billingCustomerId,
    created: workspace.created.toISOString(),
  };
}

export const WorkspaceRoleSchema = oneOf(WORKSPACE_ROLES, 'owner: manages the members; member: uses the workspace');

export const WorkspaceMemberSchema = record(
  {
    developerId: uuid('The developer’s id'),
    email: text({ max: EMAIL_MAX_LENGTH }),
    name: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
    role: WorkspaceRoleSchema,
    added: dateTime('When the developer joined the workspace'),
  },
  'A developer who belongs to the workspace',
);

export function presentMember(member: WorkspaceMember) {
  return {
    developerId: member.developerId,
    email: member.email,
    name: member.name,
    role: member.role,
    added: member.added.toISOString(),
  };
}

/**
 * An invitation's role: always `member`. Emails are not verified at sign-up, so an invitation goes
 * to whoever registered the email; an owner promotes the member once they know who it is.
 */
export const InvitedRoleSchema = oneOf([INVITED_ROLE], 'What the invitee becomes on accepting: always member (owners promote members afterwards)');

const invitationFields = {
  id: uuid('The invitation’s id'),
  email: text({ max: EMAIL_MAX_LENGTH, description: 'The email invited, as the owner typed it; the developer with this email (case-insensitively) may accept' }),
  role: InvitedRoleSchema,
  created: dateTime(),
  expires: dateTime('After this the invitation can no longer be accepted'),
};

/** What the owners see of an invitation: the same fields whether or not the email has an account. */
export const InvitationSchema = record(invitationFields, 'A pending invitation to the workspace');

export function presentInvitation(invitation: WorkspaceInvitation) {
  return {
    id: invitation.id,
    email: invitation.email,
    // What accepting grants, whatever an invitation made before the rule was changed recorded.
    role: INVITED_ROLE,
    created: invitation.created.toISOString(),
    expires: invitation.expires.toISOString(),
  };
}

/** What the invitee sees: which workspace invites them too. */
export const ReceivedInvitationSchema = record(
  {
    ...invitationFields,
    workspace: record(
      { id: uuid(), name: text({ max: WORKSPACE_NAME_MAX_LENGTH }), slug: text({ max: WORKSPACE_SLUG_MAX_LENGTH }) },
      'The workspace that invites',
    ),
  },
  'A pending invitation for the signed-in developer',
);

export function presentReceivedInvitation(invitation: WorkspaceInvitation) {
  const { id, name, slug } = invitation.workspace;
  return { ...presentInvitation(invitation), workspace: { id, name, slug } };
}
