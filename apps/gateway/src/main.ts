import { ConfigError } from '@platform/config';
import { runService } from '@platform/process';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';

await runService('apps/gateway', () => loadGatewayConfig(process.env), startGateway, (error) => error instanceof ConfigError);
