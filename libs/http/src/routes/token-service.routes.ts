import { OAuthError } from '@platform/domain';
import { defineRoute, respond } from '../route.js';
import { arrayOf, int, oneOf, optional, record, text } from '../schema.js';
import { healthRoutes, type HealthScope } from './health.routes.js';

export interface TokenServiceScope extends HealthScope {
  issuer: string;
  /** The public half of the platform's signing keys. */
  jwks(): Promise<{ keys: object[] }>;
  /** The client_credentials grant; throws OAuthError. */
  clientCredentials(input: { clientId: string; clientSecret: string | undefined; scope: string | undefined }): Promise<{
    accessToken: string;
    expiresIn: number;
    scopes: string[];
  }>;
}

const JwkSchema = record({
  kty: oneOf(['EC']),
  crv: oneOf(['P-256']),
  x: text({ max: 100 }),
  y: text({ max: 100 }),
  kid: text({ max: 100 }),
  alg: oneOf(['ES256']),
  use: oneOf(['sig']),
});

const TokenResponse = record(
  {
    access_token: text({ max: 4096, description: 'An ES256 JWT (typ at+jwt, RFC 9068)' }),
    token_type: oneOf(['Bearer']),
    expires_in: int('Seconds'),
    scope: optional(text({ max: 1000 })),
  },
  'RFC 6749 section 5.1',
);

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** RFC 6749 section 5.2: `{error, error_description}`, 400, or 401 for invalid_client. */
function oauthFailure(error: OAuthError, basicUsed: boolean) {
  const status = error.error === 'invalid_client' ? 401 : 400;
  return respond({
    status,
    body: { error: error.error, error_description: error.message },
    headers: { ...NO_STORE, ...(status === 401 && basicUsed ? { 'WWW-Authenticate': 'Basic realm="token"' } : {}) },
  });
}

/** The fields of a token request; a repeated field is a malformed request (RFC 6749 section 3.2). */
function single(form: Record<string, unknown>, name: string): string | undefined {
  const value = form[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `'${name}' must appear once`);
  if (value.length > 4096) throw new OAuthError('invalid_request', `'${name}' is too long`);
  return value;
}

/** Client credentials from HTTP Basic (RFC 6749 section 2.3.1) or the form, never both. */
function clientCredentials(authorization: string, form: Record<string, unknown>) {
  const formId = single(form, 'client_id');
  const formSecret = single(form, 'client_secret');
  if (!/^basic /i.test(authorization)) return { clientId: formId, clientSecret: formSecret, basic: false };
  if (formSecret !== undefined) throw new OAuthError('invalid_request', 'Use one client authentication method, not two');
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  let clientId: string;
  let clientSecret: string;
  try {
    clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
    clientSecret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
  } catch {
    throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  }
  if (formId !== undefined && formId !== clientId) throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
  return { clientId, clientSecret, basic: true };
}

function metadata(issuer: string) {
  return {
    issuer,
    token_endpoint: `${issuer}/oauth2/token`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: [] as string[],
    scopes_supported: [] as string[],
  };
}

const MetadataSchema = record(
  {
    issuer: text({ max: 2048 }),
    token_endpoint: text({ max: 2048 }),
    jwks_uri: text({ max: 2048 }),
    grant_types_supported: arrayOf(text({ max: 100 })),
    token_endpoint_auth_methods_supported: arrayOf(text({ max: 100 })),
    response_types_supported: arrayOf(text({ max: 100 })),
    scopes_supported: arrayOf(text({ max: 100 })),
  },
  'RFC 8414 authorization server metadata: only what this service does today',
);

/** The token service's routes: health, keys, metadata and the token endpoint. */
export const tokenServiceRoutes = [
  ...healthRoutes,
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/.well-known/jwks.json',
    operationId: 'getJwks',
    summary: 'The public keys that verify platform tokens (RFC 7517)',
    tags: ['keys'],
    auth: 'none',
    success: { status: 200, description: 'A JSON Web Key Set', schema: record({ keys: arrayOf(JwkSchema) }) },
    errors: [],
    handler: async ({ scope }) => scope.jwks(),
  }),
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'getAuthorizationServerMetadata',
    summary: 'Authorization server metadata (RFC 8414)',
    tags: ['discovery'],
    auth: 'none',
    success: { status: 200, description: 'Metadata', schema: MetadataSchema },
    errors: [],
    handler: async ({ scope }) => metadata(scope.issuer),
  }),
  defineRoute<TokenServiceScope>({
    method: 'GET',
    path: '/.well-known/openid-configuration',
    operationId: 'getOpenIdConfiguration',
    summary: 'The same metadata at the OpenID discovery address, for clients that look there',
    tags: ['discovery'],
    auth: 'none',
    success: { status: 200, description: 'Metadata', schema: MetadataSchema },
    errors: [],
    handler: async ({ scope }) => metadata(scope.issuer),
  }),
  defineRoute<TokenServiceScope, undefined, undefined, Record<string, unknown> | undefined>({
    method: 'POST',
    path: '/oauth2/token',
    operationId: 'token',
    summary: 'Token endpoint (RFC 6749): form-encoded; grant_type client_credentials',
    description:
      'Client authentication by HTTP Basic or client_id/client_secret in the form (both: invalid_request). Errors are ' +
      'RFC 6749 `{error, error_description}` (400; 401 invalid_client). Responses carry Cache-Control: no-store.',
    tags: ['oauth'],
    auth: 'none',
    form: true,
    success: { status: 200, description: 'An access token', schema: TokenResponse },
    errors: [401],
    handler: async ({ body, header, scope }) => {
      let basicUsed = /^basic /i.test(header('authorization'));
      try {
        if (body === undefined) throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
        const grantType = single(body, 'grant_type');
        if (grantType === undefined) throw new OAuthError('invalid_request', "'grant_type' is required");
        const credentials = clientCredentials(header('authorization'), body);
        basicUsed = credentials.basic;
        if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', `grant_type '${grantType}' is not supported`);
        if (credentials.clientId === undefined) throw new OAuthError('invalid_client', 'Client authentication is required');
        const issued = await scope.clientCredentials({
          clientId: credentials.clientId,
          clientSecret: credentials.clientSecret,
          scope: single(body, 'scope'),
        });
        return respond({
          status: 200,
          body: {
            access_token: issued.accessToken,
            token_type: 'Bearer',
            expires_in: issued.expiresIn,
            ...(issued.scopes.length ? { scope: issued.scopes.join(' ') } : {}),
          },
          headers: NO_STORE,
        });
      } catch (error) {
        if (error instanceof OAuthError) return oauthFailure(error, basicUsed);
        throw error;
      }
    },
  }),
];
