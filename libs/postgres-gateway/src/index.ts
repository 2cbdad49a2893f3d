export {
  DEFAULT_MAX_LOGINS_PER_ADDRESS,
  DEFAULT_MAX_LOGINS_PER_USER,
  DEFAULT_MAX_LOGINS_PER_USER_ADDRESS,
  DEFAULT_SCRAM_STEP_TIMEOUT_MS,
  PostgresGateway,
  type GatewayEndpoint,
  type GatewayOptions,
} from './gateway-server.js';
export { regionBackend, type Backend } from './backends.js';
export type { GatewayLog } from './context.js';
export { QueryCounters, recordQuery, type MinuteFigures, type QueryCell } from './query-counters.js';
export { MAX_CANCEL_SLOT } from './cancel-keys.js';
export { InsightsWriter } from './insights-writer.js';
export { metricsText } from './metrics-text.js';
export { DEFAULT_POOL_SETTINGS, type PoolSettings } from './server-pool.js';
export type { RoleCatalogEntry, VerifierSource } from './pooled-login.js';
export { poolSize, POOL_SHARE_OF_LIMIT, POOL_SIZE_WITHOUT_LIMIT, type PoolSizing } from './pool-size.js';
