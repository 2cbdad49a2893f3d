import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { REGIONS, type HashingPolicy, type Region, type SignInPolicy } from '@platform/domain';
import { ConfigError, readEnum, readInteger, readList, readOptionalString, readPort, readString, readTlsPair, readUrl, type Env, type TlsFiles } from './env.js';

const POSTGRES = ['postgres:', 'postgresql:'];
const HTTP = ['http:', 'https:'];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Settings both apps share. Every variable, with its default, is listed in the README. */
export interface PlatformConfig {
  /** The control plane's PostgreSQL database. */
  databaseUrl: string;
  regions: Region[];
  /** An administrative URL (may create and drop databases) of the cluster serving each region. */
  clusterUrls: Record<Region, string>;
  /** `tls`: the app serves https with it (API_TLS_CERT and API_TLS_KEY); null, plain http. */
  api: { host: string; port: number; publicBaseUrl: string; publicApiUrl: string; tls: TlsFiles | null };
  /** `tls`: OAUTH_TLS_CERT and OAUTH_TLS_KEY. */
  oauth: { host: string; port: number; issuer: string; tls: TlsFiles | null };
  /** Limits of the HTTP servers of apps/api and apps/oauth, against slow or too many clients. */
  http: HttpServerLimits;
  /**
   * The PostgreSQL gateway: where it listens, and the postgres:// address clients are given. The
   * pooled endpoint (transaction pooling, GATEWAY_POOLED_PORT) is off unless its port is set: null then.
   */
  gateway: { host: string; port: number; publicUrl: string; pooledPort: number | null; pooledPublicUrl: string | null };
  developerTokenTtlSeconds: number;
  reconcileIntervalMs: number;
  logLevel: LogLevel;
  buildHash: string;
  /** Test-only: a named step at which the provisioner kills its own process. */
  faultPoint: string | undefined;
  /** Addresses and CIDR ranges of proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES). */
  trustedProxies: string[];
  postgres: PostgresTimeouts;
}

/** How long the apps wait for PostgreSQL (README "When PostgreSQL stops answering"). */
export interface PostgresTimeouts {
  /** Opening a connection, or waiting for one of a full pool's, on every pool (DB_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs: number;
  /** All a request waits for from PostgreSQL, from its arrival; then 503 (DB_REQUEST_DEADLINE_MS). */
  requestDeadlineMs: number;
  /** /readyz answers 503 when the control plane has not answered within it (READINESS_TIMEOUT_MS). */
  readinessTimeoutMs: number;
}

export interface HttpServerLimits {
  /** From a connection's first byte to the end of its request headers. */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** Connections one process holds at most; more are closed at once. */
  maxConnections: number;
}

export const DEFAULT_API_PORT = 4100;
export const DEFAULT_OAUTH_PORT = 4101;
export const DEFAULT_GATEWAY_PORT = 4102;
/** The gateway's health and metrics listener (apps/gateway), which `npm start` waits on. */
export const DEFAULT_GATEWAY_ADMIN_PORT = 4103;

/** Where `node tools/pg-extensions.mjs` puts pgvector for the embedded servers' major (PG_EXTENSIONS_DIR). */
export const DEFAULT_EXTENSIONS_DIR = '.data/pg-extensions-18';

/**
 * PG_EXTENSIONS_DIR, resolved against the working folder: extensions every embedded server the
 * platform starts (the shared cluster, compute instances, test servers) loads beside its own.
 */
export function readExtensionsDir(env: Env, cwd = process.cwd()): string {
  return resolve(cwd, readString(env, 'PG_EXTENSIONS_DIR', DEFAULT_EXTENSIONS_DIR));
}

export function clusterUrlVariable(region: Region): string {
  return `CLUSTER_URL_${region}`;
}

/** The URL of another database on the same PostgreSQL server (same role, host, port and options). */
export function databaseUrl(serverUrl: string, database: string): string {
  const parsed = new URL(serverUrl);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** The same server as `url`, but its maintenance database: where databases are created and dropped. */
export function maintenanceUrl(url: string): string {
  return databaseUrl(url, 'postgres');
}

export function loadPlatformConfig(env: Env): PlatformConfig {
  const databaseUrl = readUrl(env, 'DATABASE_URL', undefined, POSTGRES);
  const regions = readList(env, 'PLATFORM_REGIONS', REGIONS, REGIONS);
  const clusterUrls = {} as Record<Region, string>;
  for (const region of REGIONS) {
    clusterUrls[region] = readUrl(env, clusterUrlVariable(region), maintenanceUrl(databaseUrl), POSTGRES);
  }
  const apiHost = readString(env, 'API_HOST', '127.0.0.1');
  const apiPort = readPort(env, 'API_PORT', DEFAULT_API_PORT);
  const oauthHost = readString(env, 'OAUTH_HOST', '127.0.0.1');
  const oauthPort = readPort(env, 'OAUTH_PORT', DEFAULT_OAUTH_PORT);
  const gatewayHost = readString(env, 'GATEWAY_HOST', '127.0.0.1');
  const gatewayPort = readPort(env, 'GATEWAY_PORT', DEFAULT_GATEWAY_PORT);
  const pooledPort = readOptionalString(env, 'GATEWAY_POOLED_PORT') === undefined ? null : readPort(env, 'GATEWAY_POOLED_PORT', 0);
  const apiTls = readTlsPair(env, 'API_TLS_CERT', 'API_TLS_KEY');
  const oauthTls = readTlsPair(env, 'OAUTH_TLS_CERT', 'OAUTH_TLS_KEY');
  const publicBaseUrl = readUrl(env, 'PUBLIC_BASE_URL', `${apiTls ? 'https' : 'http'}://${displayHost(apiHost)}:${apiPort}`, HTTP);
  const buildHash = readOptionalString(env, 'BUILD_HASH') ?? 'dev';
  if (!/^[A-Za-z0-9._-]{1,40}$/.test(buildHash)) throw new ConfigError('BUILD_HASH', 'must be a short hash or tag');
  return {
    databaseUrl,
    regions,
    clusterUrls,
    api: {
      host: apiHost,
      port: apiPort,
      publicBaseUrl,
      publicApiUrl: readUrl(env, 'PUBLIC_API_URL', publicBaseUrl, HTTP),
      tls: apiTls,
    },
    oauth: {
      host: oauthHost,
      port: oauthPort,
      issuer: readUrl(env, 'OAUTH_ISSUER', `${oauthTls ? 'https' : 'http'}://${displayHost(oauthHost)}:${oauthPort}`, HTTP),
      tls: oauthTls,
    },
    gateway: {
      host: gatewayHost,
      port: gatewayPort,
      publicUrl: readGatewayUrl(env, 'GATEWAY_PUBLIC_URL', `postgres://${displayHost(gatewayHost)}:${gatewayPort}`),
      pooledPort,
      pooledPublicUrl: pooledPort === null ? null : readGatewayUrl(env, 'GATEWAY_POOLED_PUBLIC_URL', `postgres://${displayHost(gatewayHost)}:${pooledPort}`),
    },
    http: loadHttpServerLimits(env),
    developerTokenTtlSeconds: readInteger(env, 'DEVELOPER_TOKEN_TTL', 3600, { min: 60, max: 86_400 }),
    reconcileIntervalMs: readInteger(env, 'RECONCILE_INTERVAL_MS', 1000, { min: 50, max: 600_000 }),
    logLevel: readEnum(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    buildHash,
    faultPoint: readOptionalString(env, 'PLATFORM_FAULT_POINT'),
    trustedProxies: readTrustedProxies(env),
    postgres: {
      connectTimeoutMs: readInteger(env, 'DB_CONNECT_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 }),
      requestDeadlineMs: readInteger(env, 'DB_REQUEST_DEADLINE_MS', 10_000, { min: 100, max: 600_000 }),
      readinessTimeoutMs: readInteger(env, 'READINESS_TIMEOUT_MS', 2_000, { min: 100, max: 60_000 }),
    },
  };
}

/** TRUSTED_PROXIES: comma-separated IP addresses and CIDR ranges (`10.0.0.0/8`, `fd00::/8`); none by default. */
function readTrustedProxies(env: Env): string[] {
  const entries = (readOptionalString(env, 'TRUSTED_PROXIES') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || extra !== undefined || !bitsOk) throw new ConfigError('TRUSTED_PROXIES', `'${entry}' is not an IP address or CIDR range`);
  }
  return entries;
}

function loadHttpServerLimits(env: Env): HttpServerLimits {
  const requestTimeoutMs = readInteger(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, { min: 100, max: 600_000 });
  const headersTimeoutMs = readInteger(env, 'HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), { min: 100, max: 600_000 });
  // Node's rule: the headers must be due no later than the whole request.
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: readInteger(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, { min: 100, max: 600_000 }),
    maxConnections: readInteger(env, 'HTTP_MAX_CONNECTIONS', 10_000, { min: 1, max: 1_000_000 }),
  };
}

/** GATEWAY_PUBLIC_URL, GATEWAY_POOLED_PUBLIC_URL: a postgres:// URL with a host and nothing after it but an optional port. */
function readGatewayUrl(env: Env, name: string, fallback: string): string {
  const value = readUrl(env, name, fallback, POSTGRES);
  const url = new URL(value);
  if (!url.hostname || url.username || url.password || (url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) {
    throw new ConfigError(name, 'must be postgres://host:port with no user, database or parameters');
  }
  return value;
}

function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** Password sign-in settings: user sign-in on apps/api, developer sign-in on apps/oauth. */
export interface SignInSettings {
  /** scrypt cost of new password hashes (2^logN). */
  passwordHashLogN: number;
  /** The throttling policy (README "Sign-in throttling"). */
  login: SignInPolicy;
  /** The password-hashing queue's policy (README "Sign-in throttling", *Hashing capacity*). */
  hashing: HashingPolicy;
}

/** Settings of the fixed-window throttle this policy replaced, each with what replaced it. */
const RETIRED_LOGIN_SETTINGS: Record<string, string> = {
  LOGIN_MAX_FAILURES_PER_EMAIL: 'LOGIN_DELAY_AFTER_FAILURES (per account and address) and LOGIN_DELAY_AFTER_ACCOUNT_FAILURES',
  LOGIN_MAX_FAILURES_PER_CLIENT: 'LOGIN_DELAY_AFTER_ADDRESS_FAILURES',
  LOGIN_FAILURE_WINDOW: 'LOGIN_FAILURE_MEMORY',
};

/**
 * Hashes at once by default: the machine's cores, but at least one of the libuv pool's threads
 * (UV_THREADPOOL_SIZE, 4 unless set) left over, where scrypt runs beside file reads, DNS lookups
 * and token signatures, which would otherwise wait behind every hash.
 */
function defaultHashingSlots(env: Env): number {
  const pool = readInteger(env, 'UV_THREADPOOL_SIZE', 4, { min: 1, max: 1024 });
  return Math.max(1, Math.min(availableParallelism(), pool - 1));
}

export function loadSignInSettings(env: Env): SignInSettings {
  for (const [name, replacement] of Object.entries(RETIRED_LOGIN_SETTINGS)) {
    if (env[name] !== undefined) throw new ConfigError(name, `no longer read; see ${replacement}`);
  }
  const maxDelaySeconds = readInteger(env, 'LOGIN_DELAY_MAX', 900, { min: 1, max: 86_400 });
  const memorySeconds = readInteger(env, 'LOGIN_FAILURE_MEMORY', 86_400, { min: 1, max: 30 * 86_400 });
  // A counter forgotten before its wait ends would hand an attacker a fresh allowance.
  if (memorySeconds < maxDelaySeconds) throw new ConfigError('LOGIN_FAILURE_MEMORY', `must be at least LOGIN_DELAY_MAX (${maxDelaySeconds})`);
  return {
    passwordHashLogN: readInteger(env, 'PASSWORD_HASH_LOGN', 15, { min: 10, max: 20 }),
    hashing: {
      slots: readInteger(env, 'PASSWORD_HASH_CONCURRENCY', defaultHashingSlots(env), { min: 1, max: 256 }),
      perAccount: readInteger(env, 'PASSWORD_HASH_PER_ACCOUNT', 4, { min: 1, max: 1_000 }),
      maxWaitMs: readInteger(env, 'PASSWORD_HASH_MAX_WAIT_MS', 8_000, { min: 100, max: 600_000 }),
    },
    login: {
      pairFailuresBeforeDelay: readInteger(env, 'LOGIN_DELAY_AFTER_FAILURES', 5, { min: 1, max: 1_000_000 }),
      accountFailuresBeforeDelay: readInteger(env, 'LOGIN_DELAY_AFTER_ACCOUNT_FAILURES', 20, { min: 1, max: 1_000_000 }),
      addressFailuresBeforeDelay: readInteger(env, 'LOGIN_DELAY_AFTER_ADDRESS_FAILURES', 100, { min: 1, max: 1_000_000 }),
      firstDelaySeconds: readInteger(env, 'LOGIN_DELAY_FIRST', 1, { min: 1, max: 86_400 }),
      maxDelaySeconds,
      memorySeconds,
    },
  };
}

/** The token endpoint's settings: apps/oauth serves it, and apps/api at {base_url} too (the SPEC's path). */
export interface TokenEndpointSettings {
  /** How long an authorization code lives (RFC 9700: short; at most 60 s). */
  codeTtlSeconds: number;
  /** How long a refresh token lives unused; every rotation starts a new one. */
  refreshTokenTtlSeconds: number;
  /** How long a client looked up at the token endpoint is remembered (0: never). */
  clientCacheMs: number;
}

export function loadTokenEndpointSettings(env: Env): TokenEndpointSettings {
  return {
    codeTtlSeconds: readInteger(env, 'OAUTH_CODE_TTL', 60, { min: 1, max: 60 }),
    refreshTokenTtlSeconds: readInteger(env, 'REFRESH_TOKEN_TTL', 30 * 24 * 3600, { min: 60, max: 365 * 24 * 3600 }),
    clientCacheMs: readInteger(env, 'OAUTH_CLIENT_CACHE_MS', 5_000, { min: 0, max: 60_000 }),
  };
}
