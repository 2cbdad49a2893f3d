import { arrayOf, bool, defineRoute, record, text } from '@platform/http';
import { SUPPORTED_GRANT_TYPES } from './token.route.js';
import type { TokenServiceScope } from './token-service-scope.js';

const MetadataSchema = record(
  {
    issuer: text({ max: 2048 }),
    authorization_endpoint: text({ max: 2048 }),
    token_endpoint: text({ max: 2048 }),
    revocation_endpoint: text({ max: 2048 }),
    introspection_endpoint: text({ max: 2048 }),
    jwks_uri: text({ max: 2048 }),
    grant_types_supported: arrayOf(text({ max: 100 })),
    response_types_supported: arrayOf(text({ max: 100 })),
    response_modes_supported: arrayOf(text({ max: 100 })),
    code_challenge_methods_supported: arrayOf(text({ max: 100 })),
    token_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    revocation_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    introspection_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    scopes_supported: arrayOf(text({ max: 100 })),
    authorization_response_iss_parameter_supported: bool(),
  },
  'RFC 8414 authorization server metadata',
);

function metadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: `${issuer}/oauth2/token`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    introspection_endpoint: `${issuer}/oauth2/introspect`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    grant_types_supported: SUPPORTED_GRANT_TYPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: ['api:read', 'api:write'],
    authorization_response_iss_parameter_supported: true,
  };
}

/** The metadata is served at both discovery addresses clients look at. */
function metadataRoute(path: string, operationId: string, summary: string, description?: string) {
  return defineRoute<TokenServiceScope>({
    method: 'GET',
    path,
    operationId,
    summary,
    description,
    tags: ['discovery'],
    auth: 'none',
    success: { status: 200, description: 'Metadata', schema: MetadataSchema },
    errors: [],
    handler: async function serveMetadata({ scope }) {
      return metadata(scope.settings.issuer);
    },
  });
}

/** The two discovery addresses: RFC 8414's, and OpenID's, which some clients look at instead. */
export const metadataRoutes = [
  metadataRoute('/.well-known/oauth-authorization-server', 'getAuthorizationServerMetadata', 'Authorization server metadata (RFC 8414)'),
  metadataRoute(
    '/.well-known/openid-configuration',
    'getOpenIdConfiguration',
    'The same metadata at the OpenID discovery address, for clients that look there',
    'This is an OAuth 2.0 authorization server, not an OpenID Provider: no ID tokens, no userinfo.',
  ),
];
