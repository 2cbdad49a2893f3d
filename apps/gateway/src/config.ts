import { ConfigError, DEFAULT_GATEWAY_ADMIN_PORT, loadPlatformConfig, readEnum, readInteger, readPort, readTlsPair, type Env, type PlatformConfig } from '@platform/config';

export interface GatewayConfig extends PlatformConfig {
  /** PEM certificate chain and key answering SSLRequest; absent, only plain connections exist. */
  tls: { cert: Buffer; key: Buffer; certPath: string } | null;
  /** Development only: accept connections that did not ask for TLS. */
  allowPlain: boolean;
  countQueries: boolean;
  /** How often the counted minutes are written to the control plane (insights); a crash loses at most this much. */
  insightsFlushMs: number;
  /** Health and metrics over HTTP, on the gateway's host. */
  adminPort: number;
  handshakeTimeoutMs: number;
  clientStallMs: number;
  maxConnections: number;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  return readEnum(env, name, fallback ? 'true' : 'false', ['true', 'false']) === 'true';
}

export function loadGatewayConfig(env: Env): GatewayConfig {
  const platform = loadPlatformConfig(env);
  const tls = readTlsPair(env, 'GATEWAY_TLS_CERT', 'GATEWAY_TLS_KEY');
  const allowPlain = readBoolean(env, 'GATEWAY_ALLOW_PLAIN', false);
  if (!tls && !allowPlain) {
    throw new ConfigError('GATEWAY_TLS_CERT', 'is required (with GATEWAY_TLS_KEY) unless GATEWAY_ALLOW_PLAIN=true, which is for development only');
  }
  return {
    ...platform,
    tls,
    allowPlain,
    countQueries: readBoolean(env, 'GATEWAY_COUNT_QUERIES', true),
    insightsFlushMs: readInteger(env, 'GATEWAY_INSIGHTS_FLUSH_MS', 10_000, { min: 100, max: 60_000 }),
    adminPort: readPort(env, 'GATEWAY_ADMIN_PORT', DEFAULT_GATEWAY_ADMIN_PORT),
    handshakeTimeoutMs: readInteger(env, 'GATEWAY_HANDSHAKE_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 }),
    clientStallMs: readInteger(env, 'GATEWAY_CLIENT_STALL_MS', 60_000, { min: 100, max: 3_600_000 }),
    maxConnections: readInteger(env, 'GATEWAY_MAX_CONNECTIONS', 10_000, { min: 1, max: 1_000_000 }),
  };
}
