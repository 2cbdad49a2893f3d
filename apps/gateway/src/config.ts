import { availableParallelism } from 'node:os';
import { DEFAULT_POOL_SETTINGS, type PoolSettings, DEFAULT_MAX_LOGINS_PER_ADDRESS, DEFAULT_MAX_LOGINS_PER_USER, DEFAULT_MAX_LOGINS_PER_USER_ADDRESS, DEFAULT_SCRAM_STEP_TIMEOUT_MS } from '@platform/postgres-gateway';
import { ConfigError, DEFAULT_GATEWAY_ADMIN_PORT, loadPlatformConfig, readEnum, readInteger, readOptionalString, readPort, readString, readTlsPair, type Env, type PlatformConfig } from '@platform/config';

export interface GatewayConfig extends PlatformConfig {
  /** PEM certificate chain and key answering SSLRequest; absent, only plain connections exist. */
  tls: { cert: Buffer; key: Buffer; certPath: string } | null;
  /** Development only: accept connections that did not ask for TLS. */
  allowPlain: boolean;
  countQueries: boolean;
  /** How often the counted minutes are written to the control plane (insights); a crash loses at most this much. */
  insightsFlushMs: number;
  /** Health and metrics over HTTP: loopback by default, since /metrics names every database and tenant. */
  adminHost: string;
  adminPort: number;
  /** When set, /metrics wants `Authorization: Bearer <token>`; health stays open for probes. */
  adminToken: string | null;
  handshakeTimeoutMs: number;
  clientStallMs: number;
  maxConnections: number;
  /** Logins in progress from one client address; more are refused (53300). */
  maxLoginsPerAddress: number;
  /** Logins in progress of one user name that hold a backend (past the client's first SCRAM message); more are refused (53300). */
  maxLoginsPerUser: number;
  /** The same per user name and client address: one address cannot hold all of a name's logins. */
  maxLoginsPerUserAddress: number;
  /** How long a client has from the server-first-message to its final message (the step that holds a backend). */
  scramStepTimeoutMs: number;
  /**
   * Processes serving PostgreSQL clients on the same port (GATEWAY_WORKERS, default the machine's
   * cores). With more than one, this process only supervises them and answers the admin listener.
   */
  workers: number;
  /** Control-plane connections this process may hold (routes, insights); a worker holds its share of 10. */
  controlPlanePoolSize: number;
  /**
   * The pooled endpoint's pools (GATEWAY_POOL_*); used only with GATEWAY_POOLED_PORT. Each pool's
   * size follows the sessions its login may hold on its server (its connection limit): a fifth of
   * it when GATEWAY_POOL_SIZE is unset (at least 1), GATEWAY_POOL_SIZE when set but never above the
   * limit itself (poolSize). `workers` is 1 here: the whole gateway; workerShare gives each worker its share.
   */
  pools: PoolSettings;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  return readEnum(env, name, fallback ? 'true' : 'false', ['true', 'false']) === 'true';
}

/** A token short enough to guess would protect nothing; the README suggests `openssl rand -hex 32`. */
const MIN_ADMIN_TOKEN_LENGTH = 32;

function readAdminToken(env: Env): string | null {
  const token = readOptionalString(env, 'GATEWAY_ADMIN_TOKEN');
  if (token === undefined) return null;
  if (token.length < MIN_ADMIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError('GATEWAY_ADMIN_TOKEN', `must be at least ${MIN_ADMIN_TOKEN_LENGTH} printable characters without spaces`);
  }
  return token;
}

/** The default number of workers: one per core, at most 8 (each holds control-plane connections of its own). */
export function defaultWorkers(cores: number): number {
  return Math.min(cores, 8);
}

export function loadGatewayConfig(env: Env): GatewayConfig {
  const platform = loadPlatformConfig(env);
  const tls = readTlsPair(env, 'GATEWAY_TLS_CERT', 'GATEWAY_TLS_KEY');
  const allowPlain = readBoolean(env, 'GATEWAY_ALLOW_PLAIN', false);
  if (!tls && !allowPlain) {
    throw new ConfigError('GATEWAY_TLS_CERT', 'is required (with GATEWAY_TLS_KEY) unless GATEWAY_ALLOW_PLAIN=true, which is for development only');
  }
  const maxLoginsPerUser = readInteger(env, 'GATEWAY_MAX_LOGINS_PER_USER', DEFAULT_MAX_LOGINS_PER_USER, { min: 1, max: 10_000 });
  // A share of one name's logins per address: more than all of them would mean nothing.
  const maxLoginsPerUserAddress = readInteger(env, 'GATEWAY_MAX_LOGINS_PER_USER_ADDRESS', Math.min(DEFAULT_MAX_LOGINS_PER_USER_ADDRESS, maxLoginsPerUser), {
    min: 1,
    max: maxLoginsPerUser,
  });
  return {
    ...platform,
    tls,
    allowPlain,
    countQueries: readBoolean(env, 'GATEWAY_COUNT_QUERIES', true),
    insightsFlushMs: readInteger(env, 'GATEWAY_INSIGHTS_FLUSH_MS', 10_000, { min: 100, max: 60_000 }),
    adminHost: readString(env, 'GATEWAY_ADMIN_HOST', '127.0.0.1'),
    adminPort: readPort(env, 'GATEWAY_ADMIN_PORT', DEFAULT_GATEWAY_ADMIN_PORT),
    adminToken: readAdminToken(env),
    handshakeTimeoutMs: readInteger(env, 'GATEWAY_HANDSHAKE_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 }),
    clientStallMs: readInteger(env, 'GATEWAY_CLIENT_STALL_MS', 60_000, { min: 100, max: 3_600_000 }),
    maxConnections: readInteger(env, 'GATEWAY_MAX_CONNECTIONS', 10_000, { min: 1, max: 1_000_000 }),
    maxLoginsPerAddress: readInteger(env, 'GATEWAY_MAX_LOGINS_PER_ADDRESS', DEFAULT_MAX_LOGINS_PER_ADDRESS, { min: 1, max: 1_000_000 }),
    maxLoginsPerUser,
    maxLoginsPerUserAddress,
    scramStepTimeoutMs: readInteger(env, 'GATEWAY_SCRAM_STEP_TIMEOUT_MS', DEFAULT_SCRAM_STEP_TIMEOUT_MS, { min: 100, max: 600_000 }),
    workers: readInteger(env, 'GATEWAY_WORKERS', defaultWorkers(availableParallelism()), { min: 1, max: 64 }),
    controlPlanePoolSize: 10,
    pools: {
      size: readOptionalString(env, 'GATEWAY_POOL_SIZE') === undefined ? null : readInteger(env, 'GATEWAY_POOL_SIZE', 0, { min: 1, max: 10_000 }),
      workers: 1,
      waitMs: readInteger(env, 'GATEWAY_POOL_WAIT_MS', DEFAULT_POOL_SETTINGS.waitMs, { min: 10, max: 600_000 }),
      idleMs: readInteger(env, 'GATEWAY_POOL_IDLE_MS', DEFAULT_POOL_SETTINGS.idleMs, { min: 100, max: 86_400_000 }),
      preparedStatements: readInteger(env, 'GATEWAY_POOL_PREPARED_STATEMENTS', DEFAULT_POOL_SETTINGS.preparedStatements, { min: 1, max: 100_000 }),
    },
  };
}
