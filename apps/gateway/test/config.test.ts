import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, type Env } from '@platform/config';
import { runToExit } from '@platform/test-fixtures';
import { loadGatewayConfig } from '../src/config.js';

const DATABASE_URL = 'postgres://platform:secret@127.0.0.1:1/control';

function refusal(env: Env): ConfigError {
  try {
    loadGatewayConfig(env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected loadGatewayConfig to throw');
}

describe('gateway configuration', function () {
  let dir: string;
  let cert: string;
  let key: string;

  before(function () {
    dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
    cert = join(dir, 'server.crt');
    key = join(dir, 'server.key');
    // Only read and checked for PEM armour here; TLS itself is tested with real certificates.
    writeFileSync(cert, '-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n');
    writeFileSync(key, '-----BEGIN PRIVATE KEY-----\nMA==\n-----END PRIVATE KEY-----\n');
  });

  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('requires a certificate unless plain connections are allowed, which is for development', function () {
    const error = refusal({ DATABASE_URL });
    expect(error.variable).to.equal('GATEWAY_TLS_CERT');
    expect(error.message).to.include('GATEWAY_ALLOW_PLAIN=true, which is for development only');
    const plain = loadGatewayConfig({ DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'true' });
    expect(plain).to.include({ tls: null, allowPlain: true, countQueries: true, adminPort: 4103, handshakeTimeoutMs: 10_000, clientStallMs: 60_000, maxConnections: 10_000 });
  });

  it('takes the certificate and key together, as PEM files', function () {
    const config = loadGatewayConfig({ DATABASE_URL, GATEWAY_TLS_CERT: cert, GATEWAY_TLS_KEY: key });
    expect(config.tls?.certPath).to.equal(cert);
    expect(config.allowPlain).to.equal(false);
    expect(refusal({ DATABASE_URL, GATEWAY_TLS_CERT: cert }).variable).to.equal('GATEWAY_TLS_KEY');
    expect(refusal({ DATABASE_URL, GATEWAY_TLS_KEY: key }).variable).to.equal('GATEWAY_TLS_CERT');
    expect(refusal({ DATABASE_URL, GATEWAY_TLS_CERT: join(dir, 'missing.crt'), GATEWAY_TLS_KEY: key }).message).to.match(/^GATEWAY_TLS_CERT: cannot read /);
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    expect(refusal({ DATABASE_URL, GATEWAY_TLS_CERT: cert, GATEWAY_TLS_KEY: notPem }).message).to.match(/^GATEWAY_TLS_KEY: .* is not a PEM file$/);
  });

  it('serves health and metrics on loopback unless told, and takes an admin token of 32 characters or more', function () {
    const plain = { DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'true' };
    expect(loadGatewayConfig({ ...plain, GATEWAY_HOST: '0.0.0.0' })).to.include({ adminHost: '127.0.0.1', adminToken: null });
    expect(loadGatewayConfig({ ...plain, GATEWAY_ADMIN_HOST: '10.1.2.3' }).adminHost).to.equal('10.1.2.3');
    const token = 'a'.repeat(32);
    expect(loadGatewayConfig({ ...plain, GATEWAY_ADMIN_TOKEN: token }).adminToken).to.equal(token);
    expect(refusal({ ...plain, GATEWAY_ADMIN_TOKEN: 'short' }).variable).to.equal('GATEWAY_ADMIN_TOKEN');
    expect(loadGatewayConfig(plain)).to.include({ maxLoginsPerAddress: 100, maxLoginsPerUser: 50, maxLoginsPerUserAddress: 20, scramStepTimeoutMs: 2500 });
    expect(refusal({ ...plain, GATEWAY_MAX_LOGINS_PER_USER: '0' }).variable).to.equal('GATEWAY_MAX_LOGINS_PER_USER');
    // Behind a load balancer that hides client addresses, one address's share is all of a name's.
    expect(loadGatewayConfig({ ...plain, GATEWAY_MAX_LOGINS_PER_USER: '10' })).to.include({ maxLoginsPerUser: 10, maxLoginsPerUserAddress: 10 });
    expect(loadGatewayConfig({ ...plain, GATEWAY_MAX_LOGINS_PER_USER_ADDRESS: '50' }).maxLoginsPerUserAddress).to.equal(50);
    expect(refusal({ ...plain, GATEWAY_MAX_LOGINS_PER_USER_ADDRESS: '51' }).variable).to.equal('GATEWAY_MAX_LOGINS_PER_USER_ADDRESS');
    expect(refusal({ ...plain, GATEWAY_SCRAM_STEP_TIMEOUT_MS: '10' }).variable).to.equal('GATEWAY_SCRAM_STEP_TIMEOUT_MS');
    expect(refusal({ ...plain, GATEWAY_ADMIN_TOKEN: `${'a'.repeat(32)} b` }).variable).to.equal('GATEWAY_ADMIN_TOKEN');
  });

  it('sizes the pooled endpoint’s pools with defaults (no size: a fifth of each pool’s connection limit; 5 s wait, 60 s idle, 200 statements), and refuses a size of 0', function () {
    const plain = { DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'true' };
    expect(loadGatewayConfig(plain).pools).to.deep.equal({ size: null, workers: 1, waitMs: 5_000, idleMs: 60_000, preparedStatements: 200 });
    const set = loadGatewayConfig({ ...plain, GATEWAY_POOL_SIZE: '5', GATEWAY_POOL_WAIT_MS: '250', GATEWAY_POOL_IDLE_MS: '1000', GATEWAY_POOL_PREPARED_STATEMENTS: '10' });
    expect(set.pools).to.deep.equal({ size: 5, workers: 1, waitMs: 250, idleMs: 1_000, preparedStatements: 10 });
    expect(refusal({ ...plain, GATEWAY_POOL_SIZE: '0' }).variable).to.equal('GATEWAY_POOL_SIZE');
  });

  it('names a wrong setting', function () {
    expect(refusal({ DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'yes' }).variable).to.equal('GATEWAY_ALLOW_PLAIN');
    expect(refusal({ DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'true', GATEWAY_COUNT_QUERIES: 'no' }).variable).to.equal('GATEWAY_COUNT_QUERIES');
    expect(refusal({ DATABASE_URL, GATEWAY_ALLOW_PLAIN: 'true', GATEWAY_CLIENT_STALL_MS: '10' }).variable).to.equal('GATEWAY_CLIENT_STALL_MS');
  });

  it('apps/gateway exits at once with status 78, naming the variable', function () {
    this.timeout(60_000);
    const { status, stderr } = runToExit('apps/gateway/src/main.ts', { DATABASE_URL });
    expect(status).to.equal(78);
    expect(stderr).to.include('apps/gateway: configuration error: GATEWAY_TLS_CERT: is required');
  });
});
