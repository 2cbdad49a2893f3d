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

export interface OAuthConfig extends PlatformConfig, SignInSettings, TokenEndpointSettings {
  /** Check every answer against the OpenAPI document (tests, development). */
  validateResponses: boolean;
}

export function loadOAuthConfig(env: Env): OAuthConfig {
  return {
    ...loadPlatformConfig(env),
    ...loadSignInSettings(env),
    ...loadTokenEndpointSettings(env),
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
  };
}
