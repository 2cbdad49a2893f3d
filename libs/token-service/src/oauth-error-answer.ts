import { OAUTH_ERROR_CODES, type OAuthError } from '@platform/domain';
import { oneOf, record, respond, text, type ResponseSpec } from '@platform/http';
import { NO_STORE } from './no-cache.js';

export const OAuthErrorSchema = record(
  { error: oneOf(OAUTH_ERROR_CODES), error_description: text({ max: 2000 }) },
  'RFC 6749 section 5.2',
);

/** RFC 6749 section 5.2: `{error, error_description}`, 400, or 401 for invalid_client (a Basic challenge when Basic was tried). */
export function oauthErrorAnswer(error: OAuthError, basicUsed: boolean) {
  const status = error.error === 'invalid_client' ? 401 : 400;
  return respond({
    status,
    body: { error: error.error, error_description: error.message },
    headers: { ...NO_STORE, ...(status === 401 && basicUsed ? { 'WWW-Authenticate': 'Basic realm="token"' } : {}) },
  });
}

/** The error answers of the form-encoded OAuth endpoints, as their routes declare them. */
export const OAUTH_ERROR_RESPONSES: ResponseSpec[] = [
  { status: 400, description: 'An RFC 6749 error: invalid_request, invalid_grant, invalid_scope, unsupported_grant_type, ...', schema: OAuthErrorSchema },
  {
    status: 401,
    description: 'invalid_client: client authentication failed',
    schema: OAuthErrorSchema,
    headers: { 'WWW-Authenticate': '`Basic realm="token"`, when the client tried HTTP Basic' },
  },
];
