import {
  loadPlatformConfig,
  loadSignInSettings,
  loadTokenEndpointSettings,
  readEnum,
  type Env,
  type PlatformConfig,
  type SignInSettings,
  type TokenEndpointSettings,
} from '@platform/config';
import { requireSecretBox, SIGNING_KEY_RING_VARIABLE, type SecretBox } from '@platform/auth';

export interface OAuthConfig extends PlatformConfig, SignInSettings, TokenEndpointSettings {
  /** Check every answer against the OpenAPI document (tests, development). */
  validateResponses: boolean;
  /** Seals the signing keys' private halves (SIGNING_KEY_SECRET_KEYS); without it the token service cannot sign. */
  signingKeySecrets: SecretBox;
}

export function loadOAuthConfig(env: Env): OAuthConfig {
  return {
    ...loadPlatformConfig(env),
    ...loadSignInSettings(env),
    ...loadTokenEndpointSettings(env),
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
    signingKeySecrets: requireSecretBox(env, SIGNING_KEY_RING_VARIABLE, 'it seals the private halves of the token-signing keys'),
  };
}
