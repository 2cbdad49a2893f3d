import { DomainError } from './errors.js';

/** The error codes of RFC 6749 (sections 4.1.2.1 and 5.2) the token service answers with. */
export const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
  'unsupported_response_type',
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];

/** An error of the OAuth protocol: its endpoints answer it as `{error, error_description}`. */
export class OAuthError extends DomainError {
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
  ) {
    super(error === 'invalid_client' ? 'unauthenticated' : 'validation', error, description);
  }
}
