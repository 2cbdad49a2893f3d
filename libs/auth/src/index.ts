export {
  KeySet,
  SIGNING_ALG,
  SIGNING_KEY_REFRESH_SECONDS,
  SIGNING_KEY_RING_VARIABLE,
  type KeyLog,
  type KeySetOptions,
  type SealingReport,
  type SigningKey,
} from './key-set.js';
export {
  ACCESS_TOKEN_TYPE,
  DEVELOPER_TOKEN_KIND,
  USER_TOKEN_KIND,
  CLIENT_TOKEN_KIND,
  issueClientToken,
  USER_TOKEN_MAX_AGE,
  maxSignedTokenSeconds,
  JwtTokenVerifier,
  JwtUserTokenIssuer,
  JwtAccessTokens,
  issueDeveloperToken,
  type IssuedToken,
  type TokenSettings,
  type VerifierSettings,
} from './tokens.js';
export { ScryptPasswordHasher } from './password-hasher.js';
export { FairHashingQueue, HASHING_DEFAULTS } from './hashing-queue.js';
export { addressKey, passwordSignIn, SignInThrottle } from './sign-in-throttle.js';
export { MailSendThrottle } from './mail-throttle.js';
export { Sha256ClientSecrets } from './client-secrets.js';
export { parseKeyRing, readSecretBox, requireSecretBox, SecretBox, type SecretKey } from './secret-box.js';
export { refusedAddress } from './sso/outbound-address.js';
export { ACCEPTED_ID_TOKEN_ALGORITHMS, checkDiscovery, DiscoveryError, fetchDiscovery, issuerOf, vetUrl, type DiscoveryFetchOptions, type OidcDiscovery } from './sso/discovery.js';
export { OpenIdRelyingParty } from './sso/relying-party.js';
