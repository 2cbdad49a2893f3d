import { ConfigError } from '@platform/config';
import { startApi } from './api.js';
import { loadApiConfig } from './config.js';

let config;
try {
  config = loadApiConfig({ ...process.env, BUILD_HASH: process.env.BUILD_HASH });
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`apps/api: configuration error: ${error.message}`);
    process.exit(78);
  }
  throw error;
}

const api = await startApi(config);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    api.close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
// Started by `npm start`: when that parent goes away, so do we.
if (process.send) process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
