import { introspectToken } from '@platform/domain';
import { arrayOf, bool, defineRoute, int, optional, record, respond, text } from '@platform/http';
import { NO_STORE } from './no-cache.js';
import { OAUTH_ERROR_RESPONSES } from './oauth-error-answer.js';
import { runOAuthEndpoint, type FormInput } from './oauth-endpoint.js';
import { requiredParameter, type FormFields } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

const IntrospectionSchema = record(
  {
    active: bool(),
    token_type: optional(text({ max: 100 })),
    scope: optional(text({ max: 1000 })),
    client_id: optional(text({ max: 100 })),
    sub: optional(text({ max: 100 })),
    aud: optional(arrayOf(text({ max: 2048 }))),
    iss: optional(text({ max: 2048 })),
    iat: optional(int('Seconds since the epoch')),
    exp: optional(int('Seconds since the epoch')),
  },
  'RFC 7662 section 2.2',
);

/** POST /oauth2/introspect (RFC 7662): confidential clients, about their own tokens. */
export const introspectRoute = defineRoute<TokenServiceScope, undefined, undefined, FormFields | undefined>({
  method: 'POST',
  path: '/oauth2/introspect',
  operationId: 'introspect',
  summary: 'Token introspection (RFC 7662), for confidential clients about their own tokens',
  description: 'Form: token. Anything not issued to the calling client, expired, spent or revoked is `{"active": false}`.',
  tags: ['oauth'],
  auth: 'none',
  form: true,
  success: { status: 200, description: 'RFC 7662 section 2.2', schema: IntrospectionSchema },
  errors: [],
  responses: OAUTH_ERROR_RESPONSES,
  handler: introspect,
});

function introspect(input: FormInput) {
  return runOAuthEndpoint(input, async (form, client) => {
    const token = requiredParameter(form, 'token');
    return respond({ status: 200, body: await introspectToken(input.scope, client, token), headers: NO_STORE });
  });
}
