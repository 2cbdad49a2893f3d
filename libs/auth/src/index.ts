export { KeySet, SIGNING_ALG, type KeySetOptions } from './key-set.js';
export {
  ACCESS_TOKEN_TYPE,
  DEVELOPER_TOKEN_KIND,
  JwtTokenVerifier,
  issueDeveloperToken,
  type IssuedToken,
  type TokenSettings,
} from './developer-token.js';
