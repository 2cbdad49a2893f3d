import { ConfigError, loadPlatformConfig } from '@platform/config';
import { startTokenService } from './oauth.js';

let config;
try {
  config = loadPlatformConfig({ ...process.env, BUILD_HASH: process.env.BUILD_HASH });
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`apps/oauth: configuration error: ${error.message}`);
    process.exit(78);
  }
  throw error;
}

const service = await startTokenService(config);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    service.close().then(
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
