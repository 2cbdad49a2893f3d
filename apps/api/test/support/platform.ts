import { httpClient, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../../src/api.js';
import { loadApiConfig } from '../../src/config.js';

export const TEST_AUDIENCE = 'http://api.test';
export const TEST_ISSUER = 'http://oauth.test';
/** AZURE_EASTUS is a valid region the platform under test does not serve. */
export const SERVED_REGIONS = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'];

export interface TestPlatform {
  postgres: TestPostgres;
  controlPlane: TestControlPlane;
  api: RunningApi;
  request: ReturnType<typeof httpClient>;
  /** The environment the API under test was configured with. */
  env: Record<string, string>;
}

let started: Promise<TestPlatform> | null = null;

/** One real API over a real PostgreSQL, shared by the test files of this app and stopped after them. */
export function platform(): Promise<TestPlatform> {
  started ??= start();
  return started;
}

async function start(): Promise<TestPlatform> {
  const postgres = await startTestPostgres();
  const controlPlane = await createTestControlPlane(postgres, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
  const env = {
    DATABASE_URL: controlPlane.url,
    API_PORT: '0',
    PUBLIC_BASE_URL: TEST_AUDIENCE,
    OAUTH_ISSUER: TEST_ISSUER,
    PLATFORM_REGIONS: SERVED_REGIONS.join(','),
    VALIDATE_RESPONSES: 'true',
    LOG_LEVEL: 'error',
    RECONCILE_INTERVAL_MS: '200',
    BUILD_HASH: 'abc1234',
    // Cheaper hashes keep the suite fast; the cost is a setting, the code path is the same.
    PASSWORD_HASH_LOGN: '10',
    // Every test signs in from 127.0.0.1: the per-client limit must not trip across the suite.
    // Tests of throttling start an API of their own with low limits.
    LOGIN_MAX_FAILURES_PER_CLIENT: '100000',
  };
  const api = await startApi(loadApiConfig(env));
  return { postgres, controlPlane, api, request: httpClient(api.url), env };
}

after(async function stopPlatform() {
  // Draining the API (up to 10 s) and stopping PostgreSQL (up to 8 s) can outlast mocha's 30 s on a loaded machine.
  this.timeout(90_000);
  if (!started) return;
  const { api, controlPlane, postgres } = await started;
  await api.close();
  await controlPlane.close();
  await postgres.stop();
});
