import {
  NotFoundError,
  ValidationError,
  assertPasswordResetToken,
  findFamilySession,
  databaseAuthSettings,
  requestEmailVerification,
  requestPasswordReset,
  resetPassword,
  startTokenSession,
  verifyEmail,
  type FamilySession,
} from '@platform/domain';
import { bool, nullable, oneOf, optional, queryBoolean, record, respond, text } from '@platform/http';
import { defineManagementRoute, HASHING_429, type ManagementScope } from '../management-scope.js';
import { emailField, passwordField } from '../request-fields.js';
import { NO_STORE, UrlSchema, nextUrl, signedInHeaders } from './auth.routes.js';
import { allowedCallbackUrl, assertCsrfDoubleSubmit, assertSdkOrigin, mailedLinkTarget } from './family-cookies.js';
import { COOKIE_AUTH, DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, SDK_ORIGIN_CSRF, cookiesOf, familyBaseUrl, familyDatabaseParams, signedIn, tokenDeps } from './family-route.js';

const urlField = (description: string) => optional(nullable(text({ max: 2048, description })));
const tokenField = (description: string) => text({ min: 1, max: 256, description });
const JsonQuery = record({ json: optional(queryBoolean('Sent by the SDK; ignored')) });
const LinkQuery = record({
  token: tokenField('The token of the mailed link'),
  identifier: emailField('The address the link was mailed to'),
  callbackUrl: optional(text({ max: 2048, description: 'Where the app goes next; kept only on an allowed origin' })),
  json: optional(queryBoolean('Sent by the SDK; ignored')),
});
const ForgotRequest = record({
  email: emailField('The account’s address'),
  password: optional(passwordField),
  callbackUrl: urlField('The app’s page that asks for the new password'),
  redirectUrl: urlField('Where the mailed link points (the app’s SDK route for GET /auth/reset-password); only on one of the database’s app origins (its auth settings)'),
});
const ResetRequest = record({
  email: emailField('The account’s address, as the link named it'),
  password: passwordField,
  token: optional(tokenField('The link’s token, when not in the `nile.reset` cookie')),
  callbackUrl: urlField('Where the app goes next'),
  redirectUrl: urlField('Ignored'),
});
const VerifyRequest = record({
  csrfToken: optional(text({ max: 256, description: 'The token from GET /auth/csrf' })),
  email: optional(emailField('Ignored: the signed-in user’s own address is mailed')),
  callbackUrl: urlField('Where the link leads after verifying; allowed origins only'),
});
const MfaRequest = record({
  token: optional(text({ max: 2048 })),
  scope: optional(oneOf(['setup', 'challenge'] as const)),
  method: optional(oneOf(['authenticator', 'email'] as const)),
  code: optional(text({ max: 64 })),
  remove: optional(bool()),
});
const SentSchema = record({ url: text({ max: 2048 }), sent: bool('Whether a mail went out: false when the address is verified already') });

const RESET =
  'Password reset, as the family’s SDK drives it: POST mails a link (the same answer whether or not the address has an ' +
  'account; 429 too_many_attempts past the per-address and per-client budgets); the link’s GET sets the `nile.reset` ' +
  'cookie; PUT with it sets the new password, ends every session of the account and signs it in.';

/** An allowed callback URL with the link's query fields added, or null. */
function withQuery(base: string, fields: Record<string, string>): string {
  const url = new URL(base);
  for (const [name, value] of Object.entries(fields)) url.searchParams.set(name, value);
  return url.toString();
}

/** The mailed link's base: the app's URL when on one of the database's app origins, else this API's own route; the callback rides along. */
async function linkBase(scope: ManagementScope, databaseId: string, appUrl: string | null | undefined, ownUrl: string, callback: string | null): Promise<string> {
  const base = appUrl ? (mailedLinkTarget((await databaseAuthSettings(scope, databaseId)).appOrigins, appUrl) ?? ownUrl) : ownUrl;
  return callback ? withQuery(base, { callbackUrl: callback }) : base;
}

/**
 * Where the `nile.reset` cookie is sent back: only to the reset route. Through the app's SDK
 * route (the request carries `nile-origin`) the cookie lands on the app's origin, whose route
 * path (the SDK's routePrefix) this API cannot know: there it is Path=/, as the SDK expects.
 */
function resetCookiePath(scope: ManagementScope, databaseId: string, header: (name: string) => string): string {
  return header('nile-origin') ? '/' : `${new URL(familyBaseUrl(scope, databaseId)).pathname}/auth/reset-password`;
}

/** The token of a `nile.reset` cookie the request holds, if live for this address; else null. */
async function heldResetToken(scope: ManagementScope, databaseId: string, held: string | undefined, email: string): Promise<string | null> {
  if (!held) return null;
  try {
    const token = decodeURIComponent(held);
    await assertPasswordResetToken(tokenDeps(scope), { databaseId, token, email });
    return token;
  } catch (error) {
    if (error instanceof ValidationError || error instanceof URIError) return null;
    throw error;
  }
}

/** The session a request carries, or null (an unknown database too: the answer must not tell). */
async function optionalSession(scope: ManagementScope, databaseId: string, token: string | undefined): Promise<FamilySession | null> {
  try {
    return await findFamilySession(scope, databaseId, token);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

function answerWithUrl(url: string, next: string | null, extra: Record<string, string | string[]> = {}) {
  return { body: { url }, headers: { ...NO_STORE, ...(next ? { Location: next } : {}), ...extra } };
}

export const familyMailRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/auth/reset-password`,
    operationId: 'familyForgotPassword',
    summary: 'Forgot password: mail a reset link (the SDK’s forgotPassword)',
    description:
      `${RESET} ${SDK_ORIGIN_CSRF} The link is \`redirectUrl\` when it is on one of the database’s app origins (its auth settings; ` +
      'the app’s SDK route, which passes GET on to this API), else GET /auth/reset-password here, with `token`, `identifier` and ' +
      '`callbackUrl` added. A session proves nothing here: signed in or not, the link goes to the inbox. The one answer with ' +
      'a token: a request that holds a live `nile.reset` cookie for this address (its browser followed the mailed link) gets ' +
      '`{url}` with that same token and no new mail, which is how the SDK’s resetPassword goes on to GET and PUT.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: JsonQuery,
    body: ForgotRequest,
    formOrJson: true,
    success: { status: 200, description: 'Mailed if the account exists; `url` is where the app goes next', schema: UrlSchema },
    errors: [400, 401, 403, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      assertSdkOrigin(scope.familyAuth, header);
      const deps = tokenDeps(scope);
      const base = familyBaseUrl(scope, params.database);
      const next = nextUrl(scope, header, body.callbackUrl ?? undefined);
      const held = await heldResetToken(scope, params.database, cookiesOf(scope, header).get('reset'), body.email);
      if (held) {
        const url = withQuery(`${base}/auth/reset-password`, { token: held, identifier: body.email.trim(), ...(next ? { callbackUrl: next } : {}) });
        return respond(answerWithUrl(url, null));
      }
      const link = await linkBase(scope, params.database, body.redirectUrl, `${base}/auth/reset-password`, next);
      await requestPasswordReset(deps, { databaseId: params.database, email: body.email, clientAddress, linkBase: link });
      return respond(answerWithUrl(next ?? base, null));
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/reset-password`,
    operationId: 'familyResetLink',
    summary: 'The mailed reset link: checks its token and sets the `nile.reset` cookie',
    description:
      `${RESET} The token is read, not used up: a used, expired or revoked token, or one for another address, is 400 ` +
      'invalid_one_time_token and sets nothing. `Location` is the callback when it is on an allowed origin (the app’s page ' +
      'that asks for the new password; the SDK’s route makes it a redirect).',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: LinkQuery,
    success: {
      status: 200,
      description: 'The token is live',
      schema: UrlSchema,
      headers: { 'Set-Cookie': '`nile.reset`: the token, HttpOnly, for as long as it lives; Path is this route’s (Path=/ through the app’s SDK route, on the app’s origin)', Location: 'The callback, when allowed' },
    },
    errors: [400],
    handler: async ({ params, query, header, scope }) => {
      const deps = tokenDeps(scope);
      await assertPasswordResetToken(deps, { databaseId: params.database, token: query.token, email: query.identifier });
      const next = allowedCallbackUrl(scope.familyAuth, query.callbackUrl);
      const ttl = deps.lifetimes?.passwordResetSeconds ?? 3600;
      const cookie = cookiesOf(scope, header).set('reset', encodeURIComponent(query.token), ttl, resetCookiePath(scope, params.database, header));
      return respond(answerWithUrl(next ?? familyBaseUrl(scope, params.database), next, { 'Set-Cookie': cookie }));
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${FAMILY_BASE}/auth/reset-password`,
    operationId: 'familyResetPassword',
    summary: 'Set a new password with the reset link’s token (signs in)',
    description:
      `${RESET} ${SDK_ORIGIN_CSRF} The token is the \`nile.reset\` cookie (or the body’s \`token\`); it works once. A used, ` +
      'expired or revoked token, or one for another address, is 400 invalid_one_time_token and changes nothing; a password ' +
      `that breaks the rules is 400 invalid_password and leaves the token usable. ${HASHING_429}`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: JsonQuery,
    body: ResetRequest,
    formOrJson: true,
    success: { status: 200, description: 'Reset and signed in', schema: UrlSchema, headers: { 'Set-Cookie': 'The new `nile.session-token`; clears `nile.reset`' } },
    errors: [400, 403, 404, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      assertSdkOrigin(scope.familyAuth, header);
      const cookies = cookiesOf(scope, header);
      const held = cookies.get('reset');
      const token = body.token ?? (held ? decodeURIComponent(held) : undefined);
      if (!token) throw new ValidationError('invalid_one_time_token', 'No reset token: follow the mailed link first (it sets the nile.reset cookie)');
      const { userId } = await resetPassword(tokenDeps(scope), { databaseId: params.database, token, password: body.password, email: body.email, clientAddress });
      const result = await startTokenSession(scope, params.database, userId);
      const next = nextUrl(scope, header, body.callbackUrl ?? undefined);
      const headers = signedInHeaders(cookies, result, next);
      // Cleared on both paths it may have been set on: the link may have been opened here, the reset made through the app.
      const routePath = resetCookiePath(scope, params.database, () => '');
      headers['Set-Cookie'] = [...(headers['Set-Cookie'] as string[]), cookies.clear('reset', '/'), cookies.clear('reset', routePath)];
      return respond({ body: { url: next ?? familyBaseUrl(scope, params.database) }, headers });
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/auth/verify-email`,
    operationId: 'familyRequestEmailVerification',
    summary: 'Mail the signed-in user a link that verifies their address (the SDK’s verifySelf)',
    description:
      `${COOKIE_AUTH} ${DOUBLE_SUBMIT_CSRF} The link is GET /auth/verify-email here, with \`callbackUrl\` when allowed. ` +
      'An address verified already gets no mail (`sent: false`). 429 too_many_attempts past the mail budgets; 502 ' +
      'mail_delivery_failed when the mail server refuses.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    body: VerifyRequest,
    formOrJson: true,
    success: { status: 200, description: 'Mailed (or verified already)', schema: SentSchema },
    errors: [401, 403, 404, 429, 502, 503],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      const { caller } = await signedIn(scope, params.database, header);
      const base = familyBaseUrl(scope, params.database);
      const next = allowedCallbackUrl(scope.familyAuth, body.callbackUrl ?? undefined);
      const link = await linkBase(scope, params.database, null, `${base}/auth/verify-email`, next);
      const { sent } = await requestEmailVerification(tokenDeps(scope), caller, { databaseId: params.database, clientAddress, linkBase: link });
      return respond({ body: { url: next ?? base, sent }, headers: NO_STORE });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/auth/verify-email`,
    operationId: 'familyVerifyEmail',
    summary: 'The mailed verification link: marks the address verified',
    description:
      'The token proves the inbox; no session is needed, but when the request carries one the token must be that user’s. ' +
      'A used, expired or revoked token, one for another address or account, or an address changed since, is 400 ' +
      'invalid_one_time_token and changes nothing. `Location` is the callback when it is on an allowed origin; a browser ' +
        '(Accept: text/html) is sent there with 303.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyDatabaseParams,
    query: LinkQuery,
    success: { status: 200, description: 'Verified', schema: UrlSchema, headers: { Location: 'The callback, when allowed' } },
    errors: [400, 401, 404],
    responses: [{ status: 303, description: 'Verified, for a browser that followed the link (it asks for HTML): on to the callback', headers: { Location: 'The callback' } }],
    handler: async ({ params, query, header, scope }) => {
      const session = await optionalSession(scope, params.database, cookiesOf(scope, header).get('session-token'));
      await verifyEmail(tokenDeps(scope), { databaseId: params.database, token: query.token, email: query.identifier, ...(session ? { caller: session.caller } : {}) });
      const next = allowedCallbackUrl(scope.familyAuth, query.callbackUrl);
      // The link always points here: a person who clicked it goes on to the app's page.
      if (next && header('accept').includes('text/html')) return respond({ status: 303, headers: { Location: next, ...NO_STORE } });
      return respond(answerWithUrl(next ?? familyBaseUrl(scope, params.database), next));
    },
  }),
  ...(['POST', 'PUT', 'DELETE'] as const).map((method) =>
    defineManagementRoute({
      method,
      path: `${FAMILY_BASE}/auth/mfa`,
      operationId: `familyMfa${method[0]}${method.slice(1).toLowerCase()}`,
      summary: 'Multi-factor authentication: not enabled on this platform',
      description:
        'Always 400 mfa_not_enabled: this platform offers no second factor yet, so sign-in never answers the SDK’s MFA ' +
        'challenge (`{method, secret}`) and there is nothing to set up, challenge or remove.',
      tags: FAMILY_TAGS,
      auth: 'cookie',
      params: familyDatabaseParams,
      body: optional(MfaRequest),
      formOrJson: true,
      success: { status: 400, description: 'Not enabled' },
      errors: [400],
      handler: async () => {
        throw new ValidationError('mfa_not_enabled', 'Multi-factor authentication is not enabled on this platform');
      },
    }),
  ),
];
