import { freePort, httpClient, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { loadOAuthConfig } from '../../src/config.js';
import { startTokenService } from '../../src/oauth.js';

export const TEST_AUDIENCE = 'http://api.test';
/** An issuer no token service here answers for: what an API that trusts someone else trusts. */
export const OTHER_ISSUER = 'http://oauth.test';

type Request = ReturnType<typeof httpClient>;

export interface TokenServiceUnderTest {
  issuer: string;
  /** Requests to the token service. */
  oauth: Request;
  close(): Promise<void>;
}

export interface TestPlatform extends Omit<TokenServiceUnderTest, 'close'> {
  postgres: TestPostgres;
  controlPlane: TestControlPlane;
  /** Requests to apps/api, a process of its own that trusts this token service. */
  request: Request;
}

let started: Promise<{ platform: TestPlatform; service: TokenServiceUnderTest; api: AppProcess }> | null = null;

/**
 * The token service in this process over a real PostgreSQL, and apps/api as a child process that
 * trusts it, shared by the test files of this app and stopped after them. The control plane signs
 * `newDeveloper()` tokens for this token service's issuer, so the API accepts them.
 */
export async function platform(): Promise<TestPlatform> {
  started ??= start();
  return (await started).platform;
}

async function start() {
  const postgres = await startTestPostgres();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const controlPlane = await createTestControlPlane(postgres, { issuer, audience: TEST_AUDIENCE });
  const service = await startTestTokenService(controlPlane, {}, port);
  const api = await startApiProcess(controlPlane, issuer);
  return { platform: { postgres, controlPlane, issuer, oauth: service.oauth, request: api.request }, service, api };
}

/**
 * A token service in this process on the control plane, on `port` or a free one, with `env` on
 * top of the suite's settings (e.g. `OAUTH_CODE_TTL`); no API trusts it.
 */
export async function startTestTokenService(controlPlane: TestControlPlane, env: Record<string, string> = {}, port?: number): Promise<TokenServiceUnderTest> {
  const listenOn = port ?? (await freePort());
  const issuer = `http://127.0.0.1:${listenOn}`;
  const running = await startTokenService(
    loadOAuthConfig({
      ...controlPlane.env,
      OAUTH_HOST: '127.0.0.1',
      OAUTH_PORT: String(listenOn),
      OAUTH_ISSUER: issuer,
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      LOG_LEVEL: 'error',
      // Every answer is checked against the route's declared responses (an undeclared one is a 500).
      VALIDATE_RESPONSES: 'true',
      // Cheaper hashes keep the suite fast; the cost is a setting, the code path is the same.
      PASSWORD_HASH_LOGN: '10',
      // Every test signs in from 127.0.0.1: the per-client limit must not trip across the suite.
      LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '100000',
      ...env,
    }),
  );
  return { issuer, oauth: httpClient(issuer), close: () => running.close() };
}

/** apps/api as a child process on the control plane, trusting `issuer`; revocations reach it within 200 ms. */
export function startApiProcess(controlPlane: TestControlPlane, issuer: string): Promise<AppProcess> {
  return startAppProcess('apps/api/src/main.ts', {
    portVariable: 'API_PORT',
    env: {
      ...controlPlane.env,
      API_HOST: '127.0.0.1',
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      OAUTH_ISSUER: issuer,
      PLATFORM_REGIONS: 'AWS_US_WEST_2,AWS_EU_CENTRAL_1',
      VALIDATE_RESPONSES: 'true',
      LOG_LEVEL: 'error',
      RECONCILE_INTERVAL_MS: '200',
      REVOCATION_POLL_MS: '200',
      BUILD_HASH: 'abc1234',
      PASSWORD_HASH_LOGN: '10',
      LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '100000',
    },
  });
}

after(async function stopPlatform() {
  // Draining the API (up to 10 s) and stopping PostgreSQL (up to 8 s) can outlast mocha's 30 s on a loaded machine.
  this.timeout(90_000);
  if (!started) return;
  const { platform, service, api } = await started;
  await api.stop();
  await service.close();
  await platform.controlPlane.close();
  await platform.postgres.stop();
});
