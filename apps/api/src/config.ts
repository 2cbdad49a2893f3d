import {
  ConfigError,
  loadBackupConfig,
  loadMailSettings,
  loadPlatformConfig,
  loadSignInSettings,
  loadTokenEndpointSettings,
  readDurationSeconds,
  readEnum,
  readInteger,
  readExtensionsDir,
  readOptionalString,
  type BackupConfig,
  type Env,
  type MailSettings,
  type PlatformConfig,
  type SignInSettings,
  type TokenEndpointSettings,
} from '@platform/config';
import { readSecretBox, requireSecretBox, SIGNING_KEY_RING_VARIABLE, type SecretBox } from '@platform/auth';
import { createHmac } from 'node:crypto';
import { resolve } from 'node:path';
import { assertCatalog, computeType, DEFAULT_COMPUTE_TYPES, DEFAULT_INSIGHTS_RETENTION, type ComputeType, type InsightsRetention } from '@platform/domain';
import { CONNECTION_BUDGET_DEFAULTS, DATABASE_LIMIT_DEFAULTS, type ConnectionBudgetOptions, type DatabaseLimits } from '@platform/data-plane';

export interface ApiConfig extends PlatformConfig, SignInSettings, TokenEndpointSettings {
  /** Check every response against its schema (tests, development). */
  validateResponses: boolean;
  sessionTtlSeconds: number;
  /** How often revoked refresh-token families are read: the bound on a revocation reaching this API. */
  revocationPollMs: number;
  /** Origins whose pages may send cookie-authenticated requests. */
  allowedOrigins: string[];
  /** How long a READY database found by path or id is cached (the staleness bound). */
  databaseCacheMs: number;
  /** How long a deleted database stays restorable before it is dropped (DATABASE_DELETE_RETENTION), in seconds. */
  databaseDeleteRetentionSeconds: number;
  dataPlane: Required<ConnectionBudgetOptions>;
  /** What each database and each credential's sessions may take of a shared cluster (README "What a credential may take"). */
  databaseLimits: DatabaseLimits;
  /** Live credentials developers may hold per database (CREDENTIALS_PER_DATABASE). */
  credentialsPerDatabase: number;
  /** Whether tenant members may create users (README "Users"); off, only developers do. */
  membersCreateUsers: boolean;
  /** Whether tenant members may delete their tenants (TENANT_MEMBERS_DELETE_TENANTS); off by default. */
  membersDeleteTenants: boolean;
  /** Whether tenant members may add other users to their tenants and remove them (TENANT_MEMBERS_LINK_USERS); off by default. */
  membersLinkUsers: boolean;
  /** Whether anyone may sign up to a database through the API family's SDK, where the database's auth settings do not say (SELF_SIGN_UP); off by default. */
  selfSignUp: boolean;
  /**
   * The MAC key of the API family's CSRF cookie: derived from the signing-key ring, so every replica
   * shares it and nothing more needs configuring.
   */
  csrfSecret: Uint8Array;
  /** How often the database servers are sampled for insights (one API replica samples). */
  insightsSampleMs: number;
  insightsRetention: InsightsRetention;
  /** Seals the signing keys' private halves (SIGNING_KEY_SECRET_KEYS): this API signs tokens too. */
  signingKeySecrets: SecretBox;
  /** Seals SSO client secrets (SSO_SECRET_KEYS); null when none is configured, and SSO cannot be registered. */
  ssoSecrets: SecretBox | null;
  /** Development only: SSO providers on this machine over plain http (SSO_ALLOW_LOOPBACK_HTTP). */
  ssoAllowLoopbackHttp: boolean;
  compute: ComputeConfig;
  /** Free space of a PostgreSQL server's disk under this percentage is reported low (DISK_FREE_WARNING_PERCENT). */
  diskFreeWarningPercent: number;
  /** Base backups of the clusters whose backups are configured on this machine, and every server's archiving (README, "Backups"). */
  backups: BackupConfig;
  /** Where password reset, verification and invite mail goes (SMTP_URL, MAIL_FROM; README "Email"). */
  mail: MailSettings;
}

/** Dedicated compute (README "Dedicated compute"). */
export interface ComputeConfig {
  /** The compute types every workspace may use; empty turns dedicated compute off. */
  types: ComputeType[];
  /** Where the local driver keeps each instance's cluster (the `postgres` user must reach it). */
  dir: string;
  /** A folder with pg_dump and pg_restore of the servers' major version. */
  clientBin: string;
  /** Extensions each instance's server loads beside its own (PG_EXTENSIONS_DIR). */
  extensionsDir: string;
  intervalMs: number;
}

export function loadApiConfig(env: Env): ApiConfig {
  const platform = loadPlatformConfig(env);
  // Gone, and not silently: one platform-wide switch let one company's app receive another's tokens.
  if (env.FAMILY_APP_LINKS !== undefined && env.FAMILY_APP_LINKS !== 'false') {
    throw new ConfigError('FAMILY_APP_LINKS', 'is no longer read: list each database’s app origins in its auth settings (PUT W/databases/{databaseName}/auth-settings)');
  }
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
  const dataPlane = { ...loadConnectionBudget(env), connectTimeoutMs: platform.postgres.connectTimeoutMs };
  return {
    ...platform,
    validateResponses: readEnum(env, 'VALIDATE_RESPONSES', 'false', ['true', 'false']) === 'true',
    ...loadSignInSettings(env),
    ...loadTokenEndpointSettings(env),
    sessionTtlSeconds: readInteger(env, 'SESSION_TTL', 7 * 24 * 3600, { min: 60, max: 90 * 24 * 3600 }),
    revocationPollMs: readInteger(env, 'REVOCATION_POLL_MS', 5_000, { min: 100, max: 60_000 }),
    allowedOrigins: [...new Set([...ownOrigins, ...extraOrigins])],
    databaseCacheMs: readInteger(env, 'DATABASE_CACHE_MS', 5_000, { min: 0, max: 60_000 }),
    databaseDeleteRetentionSeconds: readDurationSeconds(env, 'DATABASE_DELETE_RETENTION', 7 * 86_400, { min: 1, max: 366 * 86_400 }),
    dataPlane,
    databaseLimits: loadDatabaseLimits(env, dataPlane.connectionsPerDatabase),
    credentialsPerDatabase: readInteger(env, 'CREDENTIALS_PER_DATABASE', 50, { min: 1, max: 10_000 }),
    membersCreateUsers: readEnum(env, 'TENANT_MEMBERS_CREATE_USERS', 'false', ['true', 'false']) === 'true',
    membersDeleteTenants: readEnum(env, 'TENANT_MEMBERS_DELETE_TENANTS', 'false', ['true', 'false']) === 'true',
    membersLinkUsers: readEnum(env, 'TENANT_MEMBERS_LINK_USERS', 'false', ['true', 'false']) === 'true',
    selfSignUp: readEnum(env, 'SELF_SIGN_UP', 'false', ['true', 'false']) === 'true',
    csrfSecret: createHmac('sha256', env[SIGNING_KEY_RING_VARIABLE] ?? '').update('api family csrf cookie').digest(),
    insightsSampleMs: readInteger(env, 'INSIGHTS_SAMPLE_MS', 10_000, { min: 100, max: 60_000 }),
    // Each at least the longest window that reads it: 7 days of 5m, 93 days of 1h, 400 days of 1d.
    insightsRetention: {
      minuteDays: readInteger(env, 'INSIGHTS_MINUTE_RETENTION_DAYS', DEFAULT_INSIGHTS_RETENTION.minuteDays, { min: 7, max: 366 }),
      hourDays: readInteger(env, 'INSIGHTS_HOUR_RETENTION_DAYS', DEFAULT_INSIGHTS_RETENTION.hourDays, { min: 93, max: 3_660 }),
      dayDays: readInteger(env, 'INSIGHTS_DAY_RETENTION_DAYS', DEFAULT_INSIGHTS_RETENTION.dayDays, { min: 400, max: 36_600 }),
    },
    signingKeySecrets: requireSecretBox(env, SIGNING_KEY_RING_VARIABLE, 'it seals the private halves of the token-signing keys'),
    // The SSO key ring (README "Single sign-on"); SSO is off without one.
    ssoSecrets: readSecretBox(env, 'SSO_SECRET_KEYS'),
    ssoAllowLoopbackHttp: readEnum(env, 'SSO_ALLOW_LOOPBACK_HTTP', 'false', ['true', 'false']) === 'true',
    diskFreeWarningPercent: readInteger(env, 'DISK_FREE_WARNING_PERCENT', 10, { min: 0, max: 100 }),
    backups: loadBackupConfig(env),
    mail: loadMailSettings(env),
    compute: {
      types: readComputeTypes(env),
      dir: resolve(readOptionalString(env, 'COMPUTE_DIR') ?? '.data/compute'),
      clientBin: resolve(readOptionalString(env, 'PG_CLIENT_BIN') ?? '.data/pg-client-18/bin'),
      extensionsDir: readExtensionsDir(env),
      intervalMs: readInteger(env, 'COMPUTE_RECONCILE_MS', 2_000, { min: 50, max: 60_000 }),
    },
  };
}

/** COMPUTE_TYPES: a JSON array of {id, computeSize, memoryMiB, hourlyCost, maxConnections}; `[]` turns compute off. */
function readComputeTypes(env: Env): ComputeType[] {
  const text = readOptionalString(env, 'COMPUTE_TYPES');
  if (text === undefined) return [...DEFAULT_COMPUTE_TYPES];
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) throw new Error('expected a JSON array');
    const types = parsed.map((item: Record<string, unknown>) =>
      computeType({
        id: String(item.id),
        computeSize: String(item.computeSize),
        memoryMiB: Number(item.memoryMiB),
        hourlyCost: Number(item.hourlyCost),
        maxConnections: Number(item.maxConnections ?? 100),
      }),
    );
    if (types.length > 0) assertCatalog(types);
    return types;
  } catch (error) {
    throw new ConfigError('COMPUTE_TYPES', (error as Error).message);
  }
}

/** The API's connections to platform databases (README, "Connections to platform databases"). */
/**
 * The per-database and per-credential limits. A database's connection limit counts the API's own
 * service-role connections (DATA_PLANE_POOL_SIZE per replica) too: it must leave room for at least
 * one replica's pool and one session of the developer's.
 */
function loadDatabaseLimits(env: NodeJS.ProcessEnv, poolSize: number): DatabaseLimits {
  const defaults = DATABASE_LIMIT_DEFAULTS;
  const mib = 1024;
  return {
    session: {
      tempFileLimitKiB: readInteger(env, 'CREDENTIAL_TEMP_FILE_LIMIT_MB', defaults.session.tempFileLimitKiB / mib, { min: 1, max: 1024 * 1024 }) * mib,
      lockTimeoutMs: readInteger(env, 'CREDENTIAL_LOCK_TIMEOUT_MS', defaults.session.lockTimeoutMs, { min: 0, max: 24 * 3_600_000 }),
      idleInTransactionTimeoutMs: readInteger(env, 'CREDENTIAL_IDLE_IN_TRANSACTION_TIMEOUT_MS', defaults.session.idleInTransactionTimeoutMs, {
        min: 0,
        max: 24 * 3_600_000,
      }),
    },
    maxConnections: readDatabaseMaxConnections(env, poolSize),
  };
}

function readDatabaseMaxConnections(env: NodeJS.ProcessEnv, poolSize: number): number {
  const limit = readInteger(env, 'DATABASE_MAX_CONNECTIONS', DATABASE_LIMIT_DEFAULTS.maxConnections, { min: 1, max: 100_000 });
  if (limit <= poolSize) {
    throw new ConfigError('DATABASE_MAX_CONNECTIONS', `must exceed DATA_PLANE_POOL_SIZE (${poolSize}): the API's own connections to a database count against it`);
  }
  return limit;
}

function loadConnectionBudget(env: NodeJS.ProcessEnv): Required<ConnectionBudgetOptions> {
  if (env.DATA_PLANE_MAX_POOLS !== undefined) {
    throw new ConfigError('DATA_PLANE_MAX_POOLS', 'is replaced by DATA_PLANE_CONNECTION_BUDGET, a cap on connections per cluster (README)');
  }
  const defaults = CONNECTION_BUDGET_DEFAULTS;
  return {
    connectionsPerCluster: readInteger(env, 'DATA_PLANE_CONNECTION_BUDGET', defaults.connectionsPerCluster, { min: 1, max: 10_000 }),
    connectionsPerDatabase: readInteger(env, 'DATA_PLANE_POOL_SIZE', defaults.connectionsPerDatabase, { min: 1, max: 100 }),
    activePerCluster: readInteger(env, 'DATA_PLANE_ACTIVE_PER_CLUSTER', defaults.activePerCluster, { min: 1, max: 1_000_000 }),
    openingPerCluster: readInteger(env, 'DATA_PLANE_OPENING_PER_CLUSTER', defaults.openingPerCluster, { min: 1, max: 10_000 }),
    queuePerDatabase: readInteger(env, 'DATA_PLANE_QUEUE', defaults.queuePerDatabase, { min: 0, max: 100_000 }),
    waitMs: readInteger(env, 'DATA_PLANE_WAIT_MS', defaults.waitMs, { min: 1, max: 60_000 }),
    idleMs: readInteger(env, 'DATA_PLANE_IDLE_MS', defaults.idleMs, { min: 100, max: 3_600_000 }),
    connectTimeoutMs: defaults.connectTimeoutMs,
  };
}
