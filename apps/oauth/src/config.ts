import { loadPlatformConfig, loadSignInSettings, readEnum, readInteger, type Env, type PlatformConfig, type SignInSettings } from '@platform/config';

export interface OAuthConfig extends PlatformConfig, SignInSettings {
  /** How long an authorization code lives (RFC 9700: short; at most 60 s). */
  codeTtlSeconds: number;
  /** How long a refresh token lives unused; every rotation starts a new one. */
  refreshTokenTtlSeconds: number;
  /** How long a client looked up at the token endpoint is remembered (0: never). */
  clientCacheMs: number;
  /** Check every answer against the OpenAPI document (tests, development). */
  validateResponses: boolean;
}

export function loadOAuthConfig(env: Env): OAuthConfig {
  return {
    ...loadPlatformConfig(env),
    ...loadSignInSettings(env),
    codeTtlSeconds: readInteger(env, 'OAUTH_CODE_TTL', 60, { min: 1, max: 60 }),
    refreshTokenTtlSeconds: readInteger(env, 'REFRESH_TOKEN_TTL', 30 * 24 * 3600, { min: 60, max: 365 * 24 * 3600 }),
    clientCacheMs: readInteger(env, 'OAUTH_CLIENT_CACHE_MS', 5_000, { min: 0, max: 60_000 }),
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
  };
}
