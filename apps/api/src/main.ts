import { ConfigError } from '@platform/config';
import { runService } from '@platform/process';
import { startApi } from './api.js';
import { loadApiConfig } from './config.js';

await runService(
  'apps/api',
  // BUILD_HASH written out so that a bundled build (tools/build-app.mjs) substitutes its own hash.
  () => loadApiConfig({ ...process.env, BUILD_HASH: process.env.BUILD_HASH }),
  startApi,
  (error) => error instanceof ConfigError,
);
