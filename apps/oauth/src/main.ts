import { ConfigError } from '@platform/config';
import { runService } from '@platform/process';
import { loadOAuthConfig } from './config.js';
import { startTokenService } from './oauth.js';

await runService(
  'apps/oauth',
  // BUILD_HASH written out so that a bundled build (tools/build-app.mjs) substitutes its own hash.
  () => loadOAuthConfig({ ...process.env, BUILD_HASH: process.env.BUILD_HASH }),
  startTokenService,
  (error) => error instanceof ConfigError,
);
