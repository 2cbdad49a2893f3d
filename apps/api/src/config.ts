import { ConfigError, loadPlatformConfig, readEnum, readInteger, readOptionalString, type Env, type PlatformConfig } from '@platform/config';

export interface ApiConfig extends PlatformConfig {
  /** Check every response against its schema (tests, development). */
  validateResponses: boolean;
  /** scrypt cost of new password hashes (2^logN). */
  passwordHashLogN: number;
  sessionTtlSeconds: number;
  login: { maxFailuresPerEmail: number; maxFailuresPerClient: number; windowSeconds: number };
  /** Origins whose pages may send cookie-authenticated requests. */
  allowedOrigins: string[];
  /** How long a READY database found by path or id is cached (the staleness bound). */
  databaseCacheMs: number;
  dataPlane: { maxPools: number; connectionsPerDatabase: number };
}

export function loadApiConfig(env: Env): ApiConfig {
  const platform = loadPlatformConfig(env);
  const ownOrigins = [new URL(platform.api.publicApiUrl).origin, new URL(platform.api.publicBaseUrl).origin];
  const extraOrigins = (readOptionalString(env, 'ALLOWED_ORIGINS') ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);
  for (const origin of extraOrigins) {
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      throw new ConfigError('ALLOWED_ORIGINS', `'${origin}' is not an origin`);
    }
    if (parsed.origin !== origin) throw new ConfigError('ALLOWED_ORIGINS', `'${origin}' is not an origin (expected ${parsed.origin})`);
  }
  return {
    ...platform,
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
    passwordHashLogN: readInteger(env, 'PASSWORD_HASH_LOGN', 15, { min: 10, max: 20 }),
    sessionTtlSeconds: readInteger(env, 'SESSION_TTL', 7 * 24 * 3600, { min: 60, max: 90 * 24 * 3600 }),
    login: {
      maxFailuresPerEmail: readInteger(env, 'LOGIN_MAX_FAILURES_PER_EMAIL', 5, { min: 1, max: 1_000_000 }),
      maxFailuresPerClient: readInteger(env, 'LOGIN_MAX_FAILURES_PER_CLIENT', 100, { min: 1, max: 1_000_000 }),
      windowSeconds: readInteger(env, 'LOGIN_FAILURE_WINDOW', 900, { min: 1, max: 86_400 }),
    },
    allowedOrigins: [...new Set([...ownOrigins, ...extraOrigins])],
    databaseCacheMs: readInteger(env, 'DATABASE_CACHE_MS', 5_000, { min: 0, max: 60_000 }),
    dataPlane: {
      maxPools: readInteger(env, 'DATA_PLANE_MAX_POOLS', 50, { min: 1, max: 10_000 }),
      connectionsPerDatabase: readInteger(env, 'DATA_PLANE_POOL_SIZE', 4, { min: 1, max: 100 }),
    },
  };
}
