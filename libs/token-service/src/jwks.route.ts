import { arrayOf, defineRoute, oneOf, record, text } from '@platform/http';
import type { TokenServiceScope } from './token-service-scope.js';

const JwkSchema = record({
  kty: oneOf(['EC']),
  crv: oneOf(['P-256']),
  x: text({ max: 100 }),
  y: text({ max: 100 }),
  kid: text({ max: 100 }),
  alg: oneOf(['ES256']),
  use: oneOf(['sig']),
});

/** GET /.well-known/jwks.json: what resource servers verify platform tokens with. */
export const jwksRoute = defineRoute<TokenServiceScope>({
  method: 'GET',
  path: '/.well-known/jwks.json',
  operationId: 'getJwks',
  summary: 'The public keys that verify platform tokens (RFC 7517)',
  description: 'Every key that still verifies, the signing one included. A rotated-in key appears here before it signs.',
  tags: ['keys'],
  auth: 'none',
  success: { status: 200, description: 'A JSON Web Key Set', schema: record({ keys: arrayOf(JwkSchema) }) },
  errors: [],
  handler: async function publicKeys({ scope }) {
    return scope.keys.publicJwks();
  },
});
