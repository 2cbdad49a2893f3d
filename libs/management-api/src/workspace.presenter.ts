import {
  EMAIL_MAX_LENGTH,
  PERSON_NAME_MAX_LENGTH,
  WORKSPACE_NAME_MAX_LENGTH,
  WORKSPACE_ROLES,
  WORKSPACE_SLUG_MAX_LENGTH,
  type Workspace,
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
