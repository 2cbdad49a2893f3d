import { selfSignUp } from '@platform/domain';
import { optional, record, respond, text, uuid } from '@platform/http';
import { defineManagementRoute } from '../management-scope.js';
import { emailField, passwordField, personNameField, pictureUrlField, tenantNameField } from '../request-fields.js';
import { CurrentUserSchema, presentCurrentUser } from '../user.presenter.js';
import { SETS_COOKIES, nextUrl, signedInHeaders } from './auth.routes.js';
import { assertCsrfDoubleSubmit } from './family-cookies.js';
import { DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, cookiesOf, familyDatabaseParams, tokenDeps } from './family-route.js';

const SignUpRequest = record({
  email: emailField('Email'),
  password: passwordField,
  csrfToken: optional(text({ max: 256, description: 'The token from GET /auth/csrf' })),
  callbackUrl: optional(text({ max: 2048, description: 'Where the app goes next; kept only on an allowed origin' })),
  name: optional(personNameField('Display name')),
  givenName: optional(personNameField('Given name')),
  familyName: optional(personNameField('Family name')),
  picture: optional(pictureUrlField),
});
const SignUpQuery = record({ tenantId: optional(uuid('Refused: a new user cannot join an existing tenant by id')), newTenantName: optional(tenantNameField) });

export const familySignUpRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/signup`,
    operationId: 'familySignUp',
    summary: 'Self sign-up: create an account and sign in (the database’s selfSignUp setting)',
    description:
      `${DOUBLE_SUBMIT_CSRF} Only where the database’s auth settings allow self sign-up (GET|PUT W/databases/{databaseName}/auth-settings; ` +
      'SELF_SIGN_UP is the platform default): otherwise 403 sign_up_disabled. `newTenantName` creates a tenant with the new user as ' +
      'its first member; `tenantId` (joining an existing tenant) is 403 tenant_join_refused. 409 email_taken when the email has ' +
      'an account in the database: its owner is mailed that someone tried (the SDK reads only 2xx-with-a-session as success, so ' +
      'this answer cannot look like a new account’s; README "Apps built on the family’s SDK"). 429 too_many_attempts with ' +
      'Retry-After past the per-address (3) and per-client (100 a day) budgets.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: SignUpQuery,
    body: SignUpRequest,
    success: { status: 201, description: 'Created and signed in', schema: CurrentUserSchema, headers: SETS_COOKIES },
    errors: [400, 403, 404, 409, 429],
    handler: async ({ params, query, body, header, scope, clientAddress }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      const { email, password, name, givenName, familyName, picture, callbackUrl } = body;
      const input = { email, password, name, givenName, familyName, picture, ...query };
      const { result } = await selfSignUp({ ...scope, ...tokenDeps(scope) }, params.database, input, clientAddress);
      if (!result) throw new Error('sign-up did not sign in');
      const next = nextUrl(scope, header, callbackUrl);
      return respond({ status: 201, body: presentCurrentUser({ user: result.user, tenantIds: result.tenantIds }), headers: signedInHeaders(cookies, result, next) });
    },
  }),
];
