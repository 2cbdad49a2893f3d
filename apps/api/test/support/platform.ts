import { rmSync } from 'node:fs';
import { freePort, httpClient, query, scratchDir, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../../src/api.js';
import { loadApiConfig } from '../../src/config.js';

export const TEST_AUDIENCE = 'http://api.test';
export const TEST_ISSUER = 'http://oauth.test';
/** A key ring for tests: one AES-256 key, as SSO_SECRET_KEYS carries it. */
export const TEST_SSO_KEYS = `test1:${Buffer.alloc(32, 7).toString('base64')}`;
/** AZURE_EASTUS is a valid region the platform under test does not serve. */
export const SERVED_REGIONS = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'];

export interface TestPlatform {
  postgres: TestPostgres;
  controlPlane: TestControlPlane;
  api: RunningApi;
  /** apps/gateway, as its own process: where credentials connect (dbHost). */
  gateway: AppProcess;
  request: ReturnType<typeof httpClient>;
  /** The environment the API under test was configured with. */
  env: Record<string, string>;
}

let started: Promise<TestPlatform> | null = null;

/** The PostgreSQL database behind a platform database (dbHost names the gateway and the user-facing name). */
export async function physicalNameOf(p: TestPlatform, databaseId: string): Promise<string> {
  const rows = await query<{ physical_name: string }>(p.controlPlane.url, 'select physical_name from databases where id = $1', [databaseId]);
  if (rows.length !== 1) throw new Error(`no database ${databaseId} in the control plane`);
  return rows[0].physical_name;
}

/** One real API over a real PostgreSQL, shared by the test files of this app and stopped after them. */
export function platform(): Promise<TestPlatform> {
  started ??= start();
  return started;
}

async function start(): Promise<TestPlatform> {
  const postgres = await startTestPostgres();
  const controlPlane = await createTestControlPlane(postgres, { issuer: TEST_ISSUER, audience: TEST_AUDIENCE });
  const gatewayPort = await freePort();
  const env = {
    ...controlPlane.env,
    GATEWAY_PORT: String(gatewayPort),
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
    LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '100000',
    // SSO client secrets are sealed with it; providers must be https on public addresses (no SSO_ALLOW_LOOPBACK_HTTP).
    SSO_SECRET_KEYS: TEST_SSO_KEYS,
    // The database servers are sampled for insights every half second.
    INSIGHTS_SAMPLE_MS: '500',
    // Dedicated compute: instance servers in a folder of this run's; steps every 200 ms.
    COMPUTE_DIR: scratchDir('platform-compute-'),
    COMPUTE_RECONCILE_MS: '200',
  };
  const gateway = await startAppProcess('apps/gateway/src/main.ts', {
    portVariable: 'GATEWAY_ADMIN_PORT',
    // The gateway's own tests (apps/gateway/test) cover TLS; here plain connections keep the focus on the API.
    // Counted minutes reach the control plane within 200 ms (insights tests). One worker: workers have
    // their own tests (apps/gateway workers.test.ts), and the suite's machine has few cores.
    env: { ...env, GATEWAY_ALLOW_PLAIN: 'true', GATEWAY_INSIGHTS_FLUSH_MS: '200', GATEWAY_WORKERS: '1' },
  });
  const api = await startApi(loadApiConfig(env));
  return { postgres, controlPlane, api, gateway, request: httpClient(api.url), env };
}

after(async function stopPlatform() {
  // Draining the API (up to 10 s) and stopping PostgreSQL (up to 8 s) can outlast mocha's 30 s on a loaded machine.
  this.timeout(90_000);
  if (!started) return;
  const { api, gateway, controlPlane, postgres, env } = await started;
  await api.close();
  await gateway.stop();
  await controlPlane.close();
  await postgres.stop();
  rmSync(env.COMPUTE_DIR, { recursive: true, force: true });
});
