import { loadPlatformConfig, readEnum, type Env, type PlatformConfig } from '@platform/config';

export interface ApiConfig extends PlatformConfig {
  /** Check every response against its schema (tests, development). */
  validateResponses: boolean;
}

export function loadApiConfig(env: Env): ApiConfig {
  return {
    ...loadPlatformConfig(env),
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
  };
}
