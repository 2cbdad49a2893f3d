import { defineRoute } from '../route.js';
import { arrayOf, record, text, oneOf } from '../schema.js';
import { healthRoutes, type HealthScope } from './health.routes.js';

export interface TokenServiceScope extends HealthScope {
  /** The public half of the platform's signing keys. */
  jwks(): Promise<{ keys: object[] }>;
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

/** The token service's routes so far: its health and the key set others verify tokens with. */
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
];
