import { revokeToken } from '@platform/domain';
import { defineRoute, respond } from '@platform/http';
import { NO_STORE } from './no-cache.js';
import { OAUTH_ERROR_RESPONSES } from './oauth-error-answer.js';
import { runOAuthEndpoint, type FormInput } from './oauth-endpoint.js';
import { requiredParameter, singleParameter, type FormFields } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** POST /oauth2/revoke (RFC 7009). */
export const revokeRoute = defineRoute<TokenServiceScope, undefined, undefined, FormFields | undefined>({
  method: 'POST',
  path: '/oauth2/revoke',
  operationId: 'revoke',
  summary: 'Token revocation (RFC 7009)',
  description:
    'Form: token, optional token_type_hint. Revoking a refresh token, or an access token from the authorization_code ' +
    'grant, revokes its whole family: the token service refuses its refresh tokens at once, and the management API refuses ' +
    'its access tokens within REVOCATION_POLL_MS (5 s by default). Unknown tokens, tokens of other clients and ' +
    'client_credentials access tokens (no family; deleting the client ends them) answer 200 and change nothing.',
  tags: ['oauth'],
  auth: 'none',
  form: true,
  success: { status: 200, description: 'Revoked, or nothing to revoke (no body)' },
  errors: [],
  responses: OAUTH_ERROR_RESPONSES,
  handler: revoke,
});

function revoke(input: FormInput) {
  return runOAuthEndpoint(input, async (form, client) => {
    const token = requiredParameter(form, 'token');
    await revokeToken(input.scope, client, token, singleParameter(form, 'token_type_hint'));
    return respond({ status: 200, headers: NO_STORE });
  });
}
