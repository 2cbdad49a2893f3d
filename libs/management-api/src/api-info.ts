import type { OpenApiInfo } from '@platform/http';

/** The title, version and servers of the management API's OpenAPI document; {api_url} is a server of its own only when it differs from {base_url}. */
export function managementApiInfo(options: { buildHash: string; publicBaseUrl: string; publicApiUrl: string }): OpenApiInfo {
  return {
    title: 'Multi-tenant PostgreSQL platform API',
    version: `0.1.0-${options.buildHash}`,
    description: 'Workspaces and databases. Errors are APIError {errorCode, message, statusCode}.',
    servers: [
      { url: options.publicBaseUrl, description: '{base_url}' },
      ...(options.publicApiUrl !== options.publicBaseUrl ? [{ url: options.publicApiUrl, description: '{api_url}' }] : []),
    ],
  };
}
