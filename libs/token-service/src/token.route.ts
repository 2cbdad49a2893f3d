import { clientCredentialsTokens, exchangeAuthorizationCode, OAuthError, refreshTokens, type IssuedTokens, type OAuthClient } from '@platform/domain';
import { defineRoute, int, oneOf, optional, record, respond, text } from '@platform/http';
import { NO_STORE } from './no-cache.js';
import { OAUTH_ERROR_RESPONSES, oauthErrorAnswer } from './oauth-error-answer.js';
import { runOAuthEndpoint, type FormInput } from './oauth-endpoint.js';
import { singleParameter, type FormFields } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

export const SUPPORTED_GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'];

const TokenResponse = record(
  {
    access_token: text({ max: 4096, description: 'An ES256 JWT (typ at+jwt, RFC 9068)' }),
    token_type: oneOf(['Bearer']),
    expires_in: int('Seconds'),
    scope: text({ max: 1000, description: 'Space-separated: api:read, api:write' }),
    refresh_token: optional(text({ max: 100, description: 'authorization_code and refresh_token grants only; single use (rotated)' })),
  },
  'RFC 6749 section 5.1',
);

/** POST /oauth2/token: the three grants, each a domain use case. */
export const tokenRoute = defineRoute<TokenServiceScope, undefined, undefined, FormFields | undefined>({
  method: 'POST',
  path: '/oauth2/token',
  operationId: 'token',
  summary: 'Token endpoint (RFC 6749): authorization_code (with PKCE), refresh_token, client_credentials',
  description:
    'Form-encoded. Confidential clients authenticate by HTTP Basic or client_id/client_secret in the form (both: ' +
    'invalid_request); public clients send client_id only. authorization_code needs code, redirect_uri (exactly as ' +
    'authorized) and code_verifier; a replayed code revokes what its first use issued. refresh_token rotates: the answer ' +
    'carries a new refresh token, and reusing a spent one revokes its whole family; `scope` may only narrow. ' +
    'client_credentials is for confidential workspace clients. Errors are RFC 6749 `{error, error_description}` (400; 401 ' +
    'invalid_client). Responses carry Cache-Control: no-store.',
  tags: ['oauth'],
  auth: 'none',
  form: true,
  success: { status: 200, description: 'Tokens', schema: TokenResponse },
  errors: [],
  responses: OAUTH_ERROR_RESPONSES,
  handler: answerTokenRequest,
});

async function answerTokenRequest(input: FormInput) {
  // The grant is checked before the client is authenticated, so an unknown grant costs no lookup.
  const grantType = input.body === undefined || typeof input.body.grant_type !== 'string' ? undefined : input.body.grant_type;
  if (input.body !== undefined && grantType === undefined) {
    return oauthErrorAnswer(new OAuthError('invalid_request', "'grant_type' is required, once"), false);
  }
  if (grantType !== undefined && !SUPPORTED_GRANT_TYPES.includes(grantType)) {
    return oauthErrorAnswer(new OAuthError('unsupported_grant_type', `grant_type '${grantType.slice(0, 100)}' is not supported`), false);
  }
  return runOAuthEndpoint(input, async (form, client) => tokenAnswer(await grant(input.scope, grantType, form, client)));
}

function grant(scope: TokenServiceScope, grantType: string | undefined, form: FormFields, client: OAuthClient): Promise<IssuedTokens> {
  if (grantType === 'client_credentials') return clientCredentialsTokens(scope, client, singleParameter(form, 'scope'));
  if (grantType === 'authorization_code') {
    return exchangeAuthorizationCode(scope, client, {
      code: singleParameter(form, 'code'),
      redirectUri: singleParameter(form, 'redirect_uri'),
      codeVerifier: singleParameter(form, 'code_verifier'),
    });
  }
  return refreshTokens(scope, client, { refreshToken: singleParameter(form, 'refresh_token'), scope: singleParameter(form, 'scope') });
}

function tokenAnswer(issued: IssuedTokens) {
  return respond({
    status: 200,
    body: {
      access_token: issued.accessToken,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
      scope: issued.scopes.join(' '),
      ...(issued.refreshToken ? { refresh_token: issued.refreshToken } : {}),
    },
    headers: NO_STORE,
  });
}
