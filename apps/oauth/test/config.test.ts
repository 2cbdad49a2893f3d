import { expect } from 'chai';
import { runToExit } from '@platform/test-fixtures';

describe('configuration at start-up', function () {
  this.timeout(60_000);

  it('apps/oauth names an unknown region in PLATFORM_REGIONS', function () {
    const { status, stderr } = runToExit('apps/oauth/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x', PLATFORM_REGIONS: 'AWS_US_WEST_2,MOON_1' });
    expect(status).to.equal(78);
    expect(stderr).to.include("PLATFORM_REGIONS: unknown value 'MOON_1'");
  });

  it('apps/oauth needs SIGNING_KEY_SECRET_KEYS and names it', function () {
    const { status, stderr } = runToExit('apps/oauth/src/main.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/x' });
    expect(status).to.equal(78);
    expect(stderr).to.include('SIGNING_KEY_SECRET_KEYS: is required: it seals the private halves of the token-signing keys');
  });
});
