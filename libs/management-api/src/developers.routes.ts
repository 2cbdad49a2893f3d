import { currentDeveloper, EMAIL_MAX_LENGTH, PERSON_NAME_MAX_LENGTH } from '@platform/domain';
import { arrayOf, nullable, record, text, uuid } from '@platform/http';
import { defineManagementRoute } from './management-scope.js';
import { WorkspaceSchema, presentWorkspace } from './workspace.presenter.js';

const DeveloperSchema = record(
  {
    id: uuid(),
    email: text({ max: EMAIL_MAX_LENGTH }),
    name: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
    workspaces: arrayOf(WorkspaceSchema, 'The workspaces this token reaches'),
  },
  'The signed-in developer',
);

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
];
