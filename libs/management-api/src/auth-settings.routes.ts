import { MAX_APP_ORIGINS, getAuthSettings, updateAuthSettings, type DatabaseAuthSettings } from '@platform/domain';
import { arrayOf, bool, nullable, optional, record, text } from '@platform/http';
import { defineManagementRoute } from './management-scope.js';
import { DATABASE_PATH, databasePathParams } from './path-params.js';

const AuthSettingsSchema = record({
  selfSignUp: bool('Whether anyone may create an account through the API family’s SDK (POST /v2/databases/{id}/signup)'),
  appOrigins: arrayOf(text({ max: 2048 }), 'The origins of the database’s own apps: mailed links that carry a token (password reset, invites) may point at URLs there'),
});
const UpdateAuthSettingsRequest = record({
  selfSignUp: optional(nullable(bool('true or false; null follows the platform default (SELF_SIGN_UP) again'))),
  appOrigins: optional(
    arrayOf(
      text({ min: 1, max: 2048 }),
      `Replaces the list (at most ${MAX_APP_ORIGINS}): each \`https://host[:port]\`, or \`http://localhost[:port]\` (also 127.0.0.1 and [::1]) for a laptop; no path, query or fragment`,
    ),
  ),
});

const SETTINGS =
  'The database’s settings for the API family’s auth API (README "Apps built on the family’s SDK"). `selfSignUp`: whether anyone ' +
  'may sign up (until set, the platform default SELF_SIGN_UP, off unless the operator turned it on). `appOrigins`: where mailed ' +
  'links that carry a token may point, when the app asks for a link to its own URL (its SDK route or page); none by default, so ' +
  'links point at this API. They are the database’s own, never the platform-wide ALLOWED_ORIGINS: there one company’s app could ' +
  'ask for links to another company’s users. The app’s origin must still be in ALLOWED_ORIGINS for its SDK calls to be accepted.';

const present = (settings: DatabaseAuthSettings) => ({ selfSignUp: settings.selfSignUp, appOrigins: settings.appOrigins });

export const authSettingsRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${DATABASE_PATH}/auth-settings`,
    operationId: 'getAuthSettings',
    summary: 'Get a database’s auth settings (self sign-up, app origins)',
    description: SETTINGS,
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    success: { status: 200, description: 'The settings as they hold', schema: AuthSettingsSchema },
    errors: [404],
    handler: async ({ params, caller, scope }) => present(await getAuthSettings(scope, caller, params.workspaceSlug, params.databaseName)),
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${DATABASE_PATH}/auth-settings`,
    operationId: 'updateAuthSettings',
    summary: 'Change a database’s auth settings',
    description:
      `${SETTINGS} Each field given replaces its value, each omitted keeps it. 400 invalid_app_origin for an origin that is not ` +
      `https (or http on localhost) or has a path, query or fragment; 400 too_many_app_origins past ${MAX_APP_ORIGINS}; nothing changes then. ` +
      '404 database_not_found also when the database is purged while the change is written.',
    tags: ['databases'],
    auth: 'management',
    params: databasePathParams,
    body: UpdateAuthSettingsRequest,
    success: { status: 200, description: 'The settings as they hold now', schema: AuthSettingsSchema },
    errors: [400, 404],
    handler: async ({ params, body, caller, scope }) => present(await updateAuthSettings(scope, caller, params.workspaceSlug, params.databaseName, body)),
  }),
];
