import { defineRoute } from '@platform/http';
import { authorizationPage } from './authorization-page.js';
import { htmlPageResponse, redirectResponse } from './html-answers.js';
import { AUTHORIZATION_PARAMS } from './pages.js';
import { singleValues } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** GET /oauth2/authorize: the sign-in page of an authorization request. */
export const authorizeRoute = defineRoute<TokenServiceScope>({
  method: 'GET',
  path: '/oauth2/authorize',
  operationId: 'authorize',
  summary: 'Authorization endpoint (RFC 6749 section 4.1): the developer sign-in page',
  description:
    'Query: response_type=code, client_id, redirect_uri (exact; a loopback URI registered without a port matches any port, ' +
    'RFC 8252), code_challenge with code_challenge_method=S256 (PKCE is required; plain is refused), optional scope and state. ' +
    'An unknown client or unregistered redirect_uri gets an HTML error page (400); other errors are redirected to the client ' +
    '(303) with `error`, `state` and `iss` (RFC 9207).',
  tags: ['oauth'],
  auth: 'none',
  success: htmlPageResponse(200, 'The sign-in page'),
  errors: [],
  responses: [
    htmlPageResponse(400, 'An error page: the client or its redirect_uri cannot be trusted, so nothing is redirected'),
    redirectResponse('Back to the client with `error`, `state` and `iss`'),
  ],
  handler: async function showSignInPage({ rawQuery, header, scope }) {
    return authorizationPage(scope, singleValues(rawQuery, AUTHORIZATION_PARAMS), header('cookie'), {
      notice: rawQuery.signed_up === '1' ? 'Your account is ready: sign in to continue.' : undefined,
    });
  },
});
