import { ConflictError, RateLimitedError, signUpDeveloper, ValidationError } from '@platform/domain';
import { defineRoute } from '@platform/http';
import { csrfMatches } from './csrf.js';
import { htmlAnswer, htmlPageResponse, inTime, redirectAnswer, redirectResponse } from './html-answers.js';
import type { FormInput } from './oauth-endpoint.js';
import { messagePage } from './pages.js';
import { singleValues, type FormFields } from './single-parameters.js';
import { signUpFormAnswer } from './sign-up-page.route.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** POST /signup: creates a developer account, then returns to the sign-in page it came from. */
export const signUpRoute = defineRoute<TokenServiceScope, undefined, undefined, FormFields | undefined>({
  method: 'POST',
  path: '/signup',
  operationId: 'signUp',
  summary: 'Creates a developer account (email, password, name), then returns to the sign-in page',
  description:
    'A taken email (case-insensitively) answers 409 with the form again; bad input 400; a form without its CSRF cookie 403; ' +
    'once an address has used its sign-up budget (LOGIN_DELAY_AFTER_ADDRESS_FAILURES sign-ups, remembered for LOGIN_FAILURE_MEMORY), 429 ' +
    'until a wait that doubles with each further sign-up ends.',
  tags: ['developers'],
  auth: 'none',
  form: true,
  success: redirectResponse('To the sign-in page of the authorization request the sign-up came from'),
  errors: [],
  responses: [
    htmlPageResponse(200, 'A confirmation page, when the sign-up came from no authorization request'),
    htmlPageResponse(400, 'The form again: an email, password or name that is not allowed'),
    htmlPageResponse(403, 'The form again: it expired (no or another CSRF cookie)'),
    htmlPageResponse(409, 'The form again: the email has an account'),
    htmlPageResponse(429, 'The form again: too many sign-ups from this address'),
  ],
  handler: signUp,
});

async function signUp({ body, header, scope, clientAddress }: FormInput) {
  const fields = singleValues(body, ['csrf', 'email', 'password', 'name', 'return']);
  const cookieHeader = header('cookie');
  // Only a query string of the authorization request goes back into a link.
  const returnQuery = /^[\w.~%=&+-]*$/.test(fields.return ?? '') ? (fields.return ?? '') : '';
  const again = (status: number, error: string) =>
    signUpFormAnswer(status, cookieHeader, scope.settings.issuer, { returnQuery, email: fields.email, name: fields.name, error });
  if (!csrfMatches(cookieHeader, fields.csrf, scope.settings.issuer)) return again(403, 'The form expired; please try again.');
  try {
    await signUpDeveloper(scope, { email: fields.email ?? '', password: fields.password ?? '', name: fields.name }, clientAddress);
  } catch (error) {
    if (error instanceof ValidationError) return again(400, error.message);
    if (error instanceof ConflictError) return again(409, error.message);
    // The sign-up budget's wait, or the hashing queue's refusal (too many password hashes under way): each says which.
    if (error instanceof RateLimitedError) return again(429, `${error.message.split(';')[0]}; try again ${inTime(error.retryAfterSeconds)}.`);
    throw error;
  }
  if (new URLSearchParams(returnQuery).get('client_id')) return redirectAnswer(`/oauth2/authorize?${returnQuery}&signed_up=1`);
  return htmlAnswer(200, messagePage('Account created', 'Your account is ready. Sign in from the application you use, for example `npm run login`.'));
}
