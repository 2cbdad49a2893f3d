import { checkAuthorizationRequest, RateLimitedError, signInAndAuthorize, UnauthenticatedError } from '@platform/domain';
import { defineRoute } from '@platform/http';
import { authorizationPage, refusedRequestAnswer } from './authorization-page.js';
import { csrfMatches } from './csrf.js';
import { htmlPageResponse, inTime, redirectAnswer, redirectResponse } from './html-answers.js';
import type { FormInput } from './oauth-endpoint.js';
import { AUTHORIZATION_PARAMS } from './pages.js';
import { singleValues, type FormFields } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** POST /oauth2/authorize: the sign-in form; a developer who signs in is sent back to the client with a code. */
export const signInRoute = defineRoute<TokenServiceScope, undefined, undefined, FormFields | undefined>({
  method: 'POST',
  path: '/oauth2/authorize',
  operationId: 'authorizeSignIn',
  summary: 'The sign-in form: on success, 303 to the redirect_uri with a code (60 s, single use), state and iss',
  description:
    'Form fields: the authorization request parameters, csrf, email, password. A wrong email or password shows the form ' +
    'again (401); repeated failures wait (429); a form without its CSRF cookie is shown again (403). A developer who is ' +
    "not a member of a workspace client's workspace is sent back with error=access_denied.",
  tags: ['oauth'],
  auth: 'none',
  form: true,
  success: redirectResponse('Back to the client with a code, or with error=access_denied'),
  errors: [],
  responses: [
    htmlPageResponse(400, 'An error page: the client or its redirect_uri cannot be trusted'),
    htmlPageResponse(401, 'The form again: email or password is incorrect'),
    htmlPageResponse(403, 'The form again: it expired (no or another CSRF cookie)'),
    htmlPageResponse(429, 'The form again: too many failed attempts'),
  ],
  handler: signIn,
});

async function signIn({ body, header, scope, clientAddress }: FormInput) {
  const params = singleValues(body, AUTHORIZATION_PARAMS);
  const fields = singleValues(body, ['csrf', 'email', 'password']);
  const cookieHeader = header('cookie');
  if (!csrfMatches(cookieHeader, fields.csrf, scope.settings.issuer)) {
    return authorizationPage(scope, params, cookieHeader, { status: 403, error: 'The form expired; please sign in again.' });
  }
  const checked = await checkAuthorizationRequest(scope, params);
  if (!checked.ok) return refusedRequestAnswer(checked);
  const credentials = { email: fields.email ?? '', password: fields.password ?? '' };
  try {
    return redirectAnswer(await signInAndAuthorize(scope, checked.request, credentials, clientAddress));
  } catch (error) {
    if (error instanceof UnauthenticatedError) {
      return authorizationPage(scope, params, cookieHeader, { status: 401, email: fields.email, error: 'Email or password is incorrect.' });
    }
    if (error instanceof RateLimitedError) {
      return authorizationPage(scope, params, cookieHeader, {
        status: 429,
        email: fields.email,
        // Failures' wait, or the hashing queue's refusal (too many sign-ins under way): each says which.
        error: `${error.message.split(';')[0]}; try again ${inTime(error.retryAfterSeconds)}.`,
      });
    }
    throw error;
  }
}
