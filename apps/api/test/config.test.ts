import { expect } from 'chai';
import { runToExit } from '@platform/test-fixtures';

describe('configuration at start-up', function () {
  this.timeout(60_000);

  it('apps/api exits at once, naming DATABASE_URL, when it is missing', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', {});
    expect(status).to.equal(78);
    expect(stderr).to.include('DATABASE_URL: is required');
  });

  it('apps/api names the variable whose value is wrong', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', API_PORT: 'eighty' });
    expect(status).to.equal(78);
    expect(stderr).to.include("API_PORT: expected a whole number, got 'eighty'");
  });

  it('apps/api refuses DATA_PLANE_MAX_POOLS, naming the budget that replaced it, rather than ignore it', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', DATA_PLANE_MAX_POOLS: '50' });
    expect(status).to.equal(78);
    expect(stderr).to.include('DATA_PLANE_MAX_POOLS: is replaced by DATA_PLANE_CONNECTION_BUDGET, a cap on connections per cluster (README)');
  });

  it('apps/api refuses FAMILY_APP_LINKS, naming the per-database setting that replaced it, rather than ignore it', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', FAMILY_APP_LINKS: 'true' });
    expect(status).to.equal(78);
    expect(stderr).to.include('FAMILY_APP_LINKS: is no longer read: list each database’s app origins in its auth settings (PUT W/databases/{databaseName}/auth-settings)');
  });

  it('apps/api checks the connection budget’s settings', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', DATA_PLANE_CONNECTION_BUDGET: '0' });
    expect(status).to.equal(78);
    expect(stderr).to.include('DATA_PLANE_CONNECTION_BUDGET: expected a number from 1 to 10000, got 0');
  });

  it('apps/api needs SIGNING_KEY_SECRET_KEYS (it signs tokens) and names it when unset or malformed', function () {
    const missing = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x' });
    expect(missing.status).to.equal(78);
    expect(missing.stderr).to.include('SIGNING_KEY_SECRET_KEYS: is required: it seals the private halves of the token-signing keys');
    const short = runToExit('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', SIGNING_KEY_SECRET_KEYS: 'k1:c2hvcnQ=' });
    expect(short.status).to.equal(78);
    expect(short.stderr).to.include("SIGNING_KEY_SECRET_KEYS: key 'k1' must be 32 bytes of base64 (openssl rand -base64 32)");
    expect(short.stderr).not.to.include('c2hvcnQ=');
  });

  it('apps/api checks the database and credential limits, naming the variable', function () {
    const base = { DATABASE_URL: 'postgres://127.0.0.1:1/x' };
    const cases: [Record<string, string>, string][] = [
      [{ DATABASE_MAX_CONNECTIONS: '4' }, "DATABASE_MAX_CONNECTIONS: must exceed DATA_PLANE_POOL_SIZE (4): the API's own connections to a database count against it"],
      [{ CREDENTIAL_TEMP_FILE_LIMIT_MB: '0' }, 'CREDENTIAL_TEMP_FILE_LIMIT_MB: expected a number from 1 to 1048576, got 0'],
      [{ CREDENTIAL_LOCK_TIMEOUT_MS: '30s' }, "CREDENTIAL_LOCK_TIMEOUT_MS: expected a whole number, got '30s'"],
    ];
    for (const [env, message] of cases) {
      const { status, stderr } = runToExit('apps/api/src/main.ts', { ...base, ...env });
      expect(status, message).to.equal(78);
      expect(stderr).to.include(message);
    }
  });

  it('apps/api refuses an SMTP_URL it cannot send through, naming it', function () {
    const { status, stderr } = runToExit('apps/api/src/main.ts', {
      DATABASE_URL: 'postgres://127.0.0.1:1/x',
      SIGNING_KEY_SECRET_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
      SMTP_URL: 'https://mail.example.com',
    });
    expect(status).to.equal(78);
    expect(stderr).to.include('SMTP_URL: must use smtp: or smtps:, got https:');
  });
});
