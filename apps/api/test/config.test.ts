import { expect } from 'chai';
import { spawnSync } from 'node:child_process';

/** Starts an app's entry point with the given environment and returns how it ended. */
function run(entry: string, env: Record<string, string>) {
  const childEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, ...env };
  const result = spawnSync(process.execPath, ['--import', 'tsx', entry], { env: childEnv, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stderr: result.stderr };
}

describe('configuration at start-up', function () {
  this.timeout(60_000);

  it('apps/api exits at once, naming DATABASE_URL, when it is missing', function () {
    const { status, stderr } = run('apps/api/src/main.ts', {});
    expect(status).to.equal(78);
    expect(stderr).to.include('DATABASE_URL: is required');
  });

  it('apps/api names the variable whose value is wrong', function () {
    const { status, stderr } = run('apps/api/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', API_PORT: 'eighty' });
    expect(status).to.equal(78);
    expect(stderr).to.include("API_PORT: expected a whole number, got 'eighty'");
  });

  it('apps/oauth names an unknown region in PLATFORM_REGIONS', function () {
    const { status, stderr } = run('apps/oauth/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', PLATFORM_REGIONS: 'AWS_US_WEST_2,MOON_1' });
    expect(status).to.equal(78);
    expect(stderr).to.include("PLATFORM_REGIONS: unknown value 'MOON_1'");
  });
});
