import cluster from 'node:cluster';
import { ConfigError } from '@platform/config';
import { runService } from '@platform/process';
import { loadGatewayConfig, type GatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { superviseGateway, workerShare } from './workers.js';

/** One process, a supervisor of GATEWAY_WORKERS workers, or one of those workers. */
function start(config: GatewayConfig) {
  if (cluster.isWorker) return startGateway(workerShare(config), { worker: true });
  return config.workers > 1 ? superviseGateway(config) : startGateway(config);
}

await runService('apps/gateway', () => loadGatewayConfig(process.env), start, (error) => error instanceof ConfigError);
