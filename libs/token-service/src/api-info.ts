import type { OpenApiInfo } from '@platform/http';

/** The title, version and server of the token service's OpenAPI document. */
export function tokenServiceApiInfo(options: { buildHash: string; issuer: string }): OpenApiInfo {
  return {
    title: 'Multi-tenant PostgreSQL platform token service',
    version: `0.1.0-${options.buildHash}`,
    description:
      "OAuth 2.0 authorization server (RFC 6749, 7636, 8414, 7009, 7662, 9068) for the platform's management API. " +
      'Errors of the OAuth endpoints are RFC 6749 `{error, error_description}`; the sign-in and sign-up pages answer HTML.',
    servers: [{ url: options.issuer, description: 'token service' }],
  };
}
