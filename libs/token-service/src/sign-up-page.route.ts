import { defineRoute } from '@platform/http';
import { csrfToken } from './csrf.js';
import { htmlAnswer, htmlPageResponse } from './html-answers.js';
import { AUTHORIZATION_PARAMS, signUpPage } from './pages.js';
import { singleValues } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** The sign-up form, blank or shown again with what was typed and why it failed. */
export function signUpFormAnswer(
  status: number,
  cookieHeader: string,
  issuer: string,
  form: { returnQuery: string; email?: string; name?: string; error?: string },
) {
  const csrf = csrfToken(cookieHeader, issuer);
  return htmlAnswer(status, signUpPage({ csrf: csrf.value, ...form }), { setCookie: csrf.setCookie });
}

/** GET /signup: the developer sign-up page, which returns to the authorization request it came from. */
export const signUpPageRoute = defineRoute<TokenServiceScope>({
  method: 'GET',
  path: '/signup',
  operationId: 'signUpPage',
  summary: 'The developer sign-up page',
  description: 'Takes the authorization request parameters, to return to the sign-in page after the account is made.',
  tags: ['developers'],
  auth: 'none',
  success: htmlPageResponse(200, 'The sign-up page'),
  errors: [],
  handler: async function showSignUpPage({ rawQuery, header, scope }) {
    const params = singleValues(rawQuery, AUTHORIZATION_PARAMS);
    const returnQuery = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
    return signUpFormAnswer(200, header('cookie'), scope.settings.issuer, { returnQuery: returnQuery.toString() });
  },
});
