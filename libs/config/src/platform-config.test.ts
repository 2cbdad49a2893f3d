import { availableParallelism } from 'node:os';
import { expect } from 'chai';
import { REGIONS } from '@platform/domain';
import { ConfigError, type Env } from './env.js';
import { DEFAULT_API_PORT, DEFAULT_GATEWAY_ADMIN_PORT, DEFAULT_GATEWAY_PORT, DEFAULT_OAUTH_PORT, clusterUrlVariable, loadPlatformConfig, loadSignInSettings, maintenanceUrl, readExtensionsDir } from './platform-config.js';

const DATABASE_URL = 'postgres://platform:secret@db.internal:5433/control';

function configError(env: Env): ConfigError {
  try {
    loadPlatformConfig(env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected loadPlatformConfig to throw');
}

describe('loadPlatformConfig', () => {
  describe('DATABASE_URL', () => {
    it('is required', () => {
      const error = configError({});
      expect(error.variable).to.equal('DATABASE_URL');
      expect(error.message).to.match(/^DATABASE_URL: /);
      expect(error.name).to.equal('ConfigError');
    });

    it('counts a blank value as missing', () => {
      expect(configError({ DATABASE_URL: '   ' }).variable).to.equal('DATABASE_URL');
    });

    it('must be a URL', () => {
      const error = configError({ DATABASE_URL: 'not a url' });
      expect(error.variable).to.equal('DATABASE_URL');
      expect(error.message).to.contain('not a valid URL');
    });

    it('must be a postgres URL', () => {
      for (const url of ['mysql://root@localhost/db', 'http://localhost:5432/db', 'file:///tmp/db']) {
        const error = configError({ DATABASE_URL: url });
        expect(error.variable, url).to.equal('DATABASE_URL');
        expect(error.message).to.contain('postgres:');
      }
    });

    it('accepts postgres: and postgresql:, trimmed', () => {
      expect(loadPlatformConfig({ DATABASE_URL }).databaseUrl).to.equal(DATABASE_URL);
      expect(loadPlatformConfig({ DATABASE_URL: `  ${DATABASE_URL}  ` }).databaseUrl).to.equal(DATABASE_URL);
      const other = 'postgresql://u@localhost/control';
      expect(loadPlatformConfig({ DATABASE_URL: other }).databaseUrl).to.equal(other);
    });
  });

  describe('defaults', () => {
    const config = loadPlatformConfig({ DATABASE_URL });

    it('listens on 127.0.0.1, ports 4100 and 4101', () => {
      expect(DEFAULT_API_PORT).to.equal(4100);
      expect(DEFAULT_OAUTH_PORT).to.equal(4101);
      expect(config.api.host).to.equal('127.0.0.1');
      expect(config.api.port).to.equal(4100);
      expect(config.oauth.host).to.equal('127.0.0.1');
      expect(config.oauth.port).to.equal(4101);
    });

    it('serves all three regions', () => {
      expect(config.regions).to.deep.equal(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS']);
    });

    it("points every region's cluster at the DATABASE_URL server's postgres database", () => {
      for (const region of REGIONS) {
        expect(config.clusterUrls[region], region).to.equal('postgres://platform:secret@db.internal:5433/postgres');
      }
    });

    it('puts the PostgreSQL gateway on 127.0.0.1:4102, its admin listener on 4103, and names it in dbHost', () => {
      expect(DEFAULT_GATEWAY_PORT).to.equal(4102);
      expect(DEFAULT_GATEWAY_ADMIN_PORT).to.equal(4103);
      expect(config.gateway).to.deep.equal({ host: '127.0.0.1', port: 4102, publicUrl: 'postgres://127.0.0.1:4102', pooledPort: null, pooledPublicUrl: null });
    });

    it('derives the public URLs and issuer from the hosts and ports', () => {
      expect(config.api.publicBaseUrl).to.equal('http://127.0.0.1:4100');
      expect(config.api.publicApiUrl).to.equal('http://127.0.0.1:4100');
      expect(config.oauth.issuer).to.equal('http://127.0.0.1:4101');
    });

    it('has the documented defaults for the rest', () => {
      expect(config.developerTokenTtlSeconds).to.equal(3600);
      expect(config.reconcileIntervalMs).to.equal(1000);
      expect(config.logLevel).to.equal('info');
      expect(config.buildHash).to.equal('dev');
      expect(config.faultPoint).to.equal(undefined);
    });
  });

  describe('cluster URLs', () => {
    it('keep the query string of DATABASE_URL in the default', () => {
      const config = loadPlatformConfig({ DATABASE_URL: 'postgres://u:p@db:5432/control?sslmode=require' });
      expect(config.clusterUrls.AZURE_EASTUS).to.equal('postgres://u:p@db:5432/postgres?sslmode=require');
    });

    it('can be set per region', () => {
      const config = loadPlatformConfig({
        DATABASE_URL,
        [clusterUrlVariable('AZURE_EASTUS')]: 'postgresql://admin@azure.example/postgres/',
      });
      expect(clusterUrlVariable('AZURE_EASTUS')).to.equal('CLUSTER_URL_AZURE_EASTUS');
      expect(config.clusterUrls.AZURE_EASTUS).to.equal('postgresql://admin@azure.example/postgres');
      expect(config.clusterUrls.AWS_US_WEST_2).to.equal('postgres://platform:secret@db.internal:5433/postgres');
    });

    it('refuse a non-postgres cluster URL, naming the variable', () => {
      const error = configError({ DATABASE_URL, CLUSTER_URL_AWS_EU_CENTRAL_1: 'https://cluster.example' });
      expect(error.variable).to.equal('CLUSTER_URL_AWS_EU_CENTRAL_1');
    });

    it('maintenanceUrl replaces only the path', () => {
      expect(maintenanceUrl('postgres://u:p@h:1234/app?x=1')).to.equal('postgres://u:p@h:1234/postgres?x=1');
      expect(maintenanceUrl('postgres://h')).to.equal('postgres://h/postgres');
    });
  });

  describe('ports', () => {
    it('reads API_PORT and OAUTH_PORT', () => {
      const config = loadPlatformConfig({ DATABASE_URL, API_PORT: '8080', OAUTH_PORT: '9090' });
      expect(config.api.port).to.equal(8080);
      expect(config.oauth.port).to.equal(9090);
      expect(config.api.publicBaseUrl).to.equal('http://127.0.0.1:8080');
      expect(config.oauth.issuer).to.equal('http://127.0.0.1:9090');
    });

    it('refuses a bad API_PORT, naming it', () => {
      for (const value of ['http', '80.5', '-1', '65536', '1e3', '0x50']) {
        const error = configError({ DATABASE_URL, API_PORT: value });
        expect(error.variable, value).to.equal('API_PORT');
        expect(error.message).to.match(/^API_PORT: /);
      }
    });

    it('refuses a bad OAUTH_PORT, naming it', () => {
      expect(configError({ DATABASE_URL, OAUTH_PORT: '70000' }).variable).to.equal('OAUTH_PORT');
    });

    it('accepts the bounds 0 and 65535', () => {
      expect(loadPlatformConfig({ DATABASE_URL, API_PORT: '0' }).api.port).to.equal(0);
      expect(loadPlatformConfig({ DATABASE_URL, API_PORT: '65535' }).api.port).to.equal(65535);
    });
  });

  describe('PLATFORM_REGIONS', () => {
    it('selects a subset, trimming and removing duplicates', () => {
      const config = loadPlatformConfig({ DATABASE_URL, PLATFORM_REGIONS: ' AZURE_EASTUS , AWS_US_WEST_2,AZURE_EASTUS,' });
      expect(config.regions).to.deep.equal(['AZURE_EASTUS', 'AWS_US_WEST_2']);
    });

    it('refuses an unknown region, naming the variable and the value', () => {
      const error = configError({ DATABASE_URL, PLATFORM_REGIONS: 'AWS_US_WEST_2,GCP_EUROPE_WEST1' });
      expect(error.variable).to.equal('PLATFORM_REGIONS');
      expect(error.message).to.match(/^PLATFORM_REGIONS: /);
      expect(error.message).to.contain('GCP_EUROPE_WEST1');
    });

    it('is case-sensitive', () => {
      expect(configError({ DATABASE_URL, PLATFORM_REGIONS: 'aws_us_west_2' }).variable).to.equal('PLATFORM_REGIONS');
    });

    it('refuses a list of nothing', () => {
      expect(configError({ DATABASE_URL, PLATFORM_REGIONS: ' , ,' }).variable).to.equal('PLATFORM_REGIONS');
    });
  });

  describe('public URLs', () => {
    it('PUBLIC_API_URL defaults to PUBLIC_BASE_URL', () => {
      const config = loadPlatformConfig({ DATABASE_URL, PUBLIC_BASE_URL: 'https://db.example.com/' });
      expect(config.api.publicBaseUrl).to.equal('https://db.example.com');
      expect(config.api.publicApiUrl).to.equal('https://db.example.com');
    });

    it('PUBLIC_API_URL can differ from PUBLIC_BASE_URL', () => {
      const config = loadPlatformConfig({
        DATABASE_URL,
        PUBLIC_BASE_URL: 'https://db.example.com',
        PUBLIC_API_URL: 'https://api.db.example.com/v1',
      });
      expect(config.api.publicBaseUrl).to.equal('https://db.example.com');
      expect(config.api.publicApiUrl).to.equal('https://api.db.example.com/v1');
    });

    it('refuse non-HTTP public URLs, naming the variable', () => {
      expect(configError({ DATABASE_URL, PUBLIC_BASE_URL: 'ftp://db.example.com' }).variable).to.equal('PUBLIC_BASE_URL');
      expect(configError({ DATABASE_URL, PUBLIC_API_URL: 'postgres://x' }).variable).to.equal('PUBLIC_API_URL');
      expect(configError({ DATABASE_URL, OAUTH_ISSUER: 'nope' }).variable).to.equal('OAUTH_ISSUER');
    });

    it('shows a wildcard host as 127.0.0.1 and brackets an IPv6 host', () => {
      expect(loadPlatformConfig({ DATABASE_URL, API_HOST: '0.0.0.0' }).api.publicBaseUrl).to.equal('http://127.0.0.1:4100');
      expect(loadPlatformConfig({ DATABASE_URL, API_HOST: '::' }).api.publicBaseUrl).to.equal('http://127.0.0.1:4100');
      const config = loadPlatformConfig({ DATABASE_URL, API_HOST: '::1', OAUTH_HOST: 'auth.local' });
      expect(config.api.host).to.equal('::1');
      expect(config.api.publicBaseUrl).to.equal('http://[::1]:4100');
      expect(config.oauth.issuer).to.equal('http://auth.local:4101');
    });
  });

  describe('other settings', () => {
    it('reads them when valid', () => {
      const config = loadPlatformConfig({
        DATABASE_URL,
        DEVELOPER_TOKEN_TTL: '600',
        RECONCILE_INTERVAL_MS: '50',
        LOG_LEVEL: 'debug',
        BUILD_HASH: 'abc123.v2-rc_1',
        PLATFORM_FAULT_POINT: 'after_create',
      });
      expect(config.developerTokenTtlSeconds).to.equal(600);
      expect(config.reconcileIntervalMs).to.equal(50);
      expect(config.logLevel).to.equal('debug');
      expect(config.buildHash).to.equal('abc123.v2-rc_1');
      expect(config.faultPoint).to.equal('after_create');
    });

    it('refuses out-of-range or malformed values, naming the variable', () => {
      const cases: [string, string][] = [
        ['DEVELOPER_TOKEN_TTL', '59'],
        ['DEVELOPER_TOKEN_TTL', '86401'],
        ['RECONCILE_INTERVAL_MS', '49'],
        ['RECONCILE_INTERVAL_MS', 'fast'],
        ['LOG_LEVEL', 'verbose'],
        ['BUILD_HASH', 'has spaces'],
        ['BUILD_HASH', 'x'.repeat(41)],
      ];
      for (const [name, value] of cases) {
        expect(configError({ DATABASE_URL, [name]: value }).variable, `${name}=${value}`).to.equal(name);
      }
    });
  });

  describe('GATEWAY_PUBLIC_URL', () => {
    it('follows GATEWAY_HOST and GATEWAY_PORT unless set', () => {
      expect(loadPlatformConfig({ DATABASE_URL, GATEWAY_HOST: '::1', GATEWAY_PORT: '6000' }).gateway.publicUrl).to.equal('postgres://[::1]:6000');
      expect(loadPlatformConfig({ DATABASE_URL, GATEWAY_PUBLIC_URL: 'postgresql://db.example.com:5439' }).gateway.publicUrl).to.equal('postgresql://db.example.com:5439');
    });

    it('refuses anything but postgres://host:port', () => {
      for (const url of ['http://db.example.com', 'postgres://u:p@db.example.com:1', 'postgres://db.example.com:1/app', 'postgres://db.example.com:1?sslmode=require']) {
        const error = configError({ DATABASE_URL, GATEWAY_PUBLIC_URL: url });
        expect(error.variable, url).to.equal('GATEWAY_PUBLIC_URL');
      }
    });
  });

  describe('GATEWAY_POOLED_PORT', () => {
    it('is off unless set, and its public URL follows GATEWAY_HOST and the port unless GATEWAY_POOLED_PUBLIC_URL is set', () => {
      const off = loadPlatformConfig({ DATABASE_URL }).gateway;
      expect([off.pooledPort, off.pooledPublicUrl]).to.deep.equal([null, null]);
      const on = loadPlatformConfig({ DATABASE_URL, GATEWAY_HOST: '0.0.0.0', GATEWAY_POOLED_PORT: '6432' }).gateway;
      expect([on.pooledPort, on.pooledPublicUrl]).to.deep.equal([6432, 'postgres://127.0.0.1:6432']);
      expect(loadPlatformConfig({ DATABASE_URL, GATEWAY_POOLED_PORT: '6432', GATEWAY_POOLED_PUBLIC_URL: 'postgres://pooler.example.com:6543' }).gateway.pooledPublicUrl).to.equal('postgres://pooler.example.com:6543');
    });

    it('refuses a port out of range and a public URL with more than host and port, naming the variable', () => {
      expect(configError({ DATABASE_URL, GATEWAY_POOLED_PORT: '70000' }).variable).to.equal('GATEWAY_POOLED_PORT');
      expect(configError({ DATABASE_URL, GATEWAY_POOLED_PORT: '6432', GATEWAY_POOLED_PUBLIC_URL: 'postgres://db.example.com:1/app' }).variable).to.equal('GATEWAY_POOLED_PUBLIC_URL');
    });
  });

  describe('TRUSTED_PROXIES', () => {
    it('trusts no proxy by default, and reads addresses and CIDR ranges, trimmed', () => {
      expect(loadPlatformConfig({ DATABASE_URL }).trustedProxies).to.deep.equal([]);
      expect(loadPlatformConfig({ DATABASE_URL, TRUSTED_PROXIES: ' 10.0.0.0/8, 192.0.2.1 ,fd00::/8,::1' }).trustedProxies).to.deep.equal(['10.0.0.0/8', '192.0.2.1', 'fd00::/8', '::1']);
    });

    it('refuses what is not an address or a range, naming the variable', () => {
      for (const value of ['proxy.internal', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', '10.0.0.0/', '*']) {
        expect(configError({ DATABASE_URL, TRUSTED_PROXIES: value }).variable, value).to.equal('TRUSTED_PROXIES');
      }
    });
  });

  describe('HTTP server limits', () => {
    it('default to 10 s for headers, 30 s for a request, 5 s keep-alive and 10000 connections', () => {
      expect(loadPlatformConfig({ DATABASE_URL }).http).to.deep.equal({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 10_000 });
    });

    it('keep the headers within the request time, following a shorter request time by default', () => {
      expect(loadPlatformConfig({ DATABASE_URL, HTTP_REQUEST_TIMEOUT_MS: '2000' }).http.headersTimeoutMs).to.equal(2_000);
      const error = configError({ DATABASE_URL, HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '3000' });
      expect(error.variable).to.equal('HTTP_HEADERS_TIMEOUT_MS');
    });
  });
});

describe('loadSignInSettings', () => {
  it('has the documented throttling defaults', () => {
    expect(loadSignInSettings({}).login).to.deep.equal({
      pairFailuresBeforeDelay: 5,
      accountFailuresBeforeDelay: 20,
      addressFailuresBeforeDelay: 100,
      firstDelaySeconds: 1,
      maxDelaySeconds: 900,
      memorySeconds: 86_400,
    });
  });

  it('has the documented hashing-queue defaults (the machine’s cores, at most the libuv pool’s threads but one; 4 per account and address; 8 s), and reads each setting', () => {
    expect(loadSignInSettings({}).hashing).to.deep.equal({ slots: Math.min(availableParallelism(), 3), perAccount: 4, maxWaitMs: 8_000 });
    // One thread of the libuv pool is left to file reads, DNS and token signatures.
    expect(loadSignInSettings({ UV_THREADPOOL_SIZE: '2' }).hashing.slots).to.equal(1);
    expect(loadSignInSettings({ UV_THREADPOOL_SIZE: '64' }).hashing.slots).to.equal(availableParallelism());
    const set = { PASSWORD_HASH_CONCURRENCY: '3', PASSWORD_HASH_PER_ACCOUNT: '2', PASSWORD_HASH_MAX_WAIT_MS: '1500' };
    expect(loadSignInSettings(set).hashing).to.deep.equal({ slots: 3, perAccount: 2, maxWaitMs: 1_500 });
  });

  it('refuses a memory shorter than the longest wait, and the retired settings, naming them', () => {
    const cases: [Env, string][] = [
      [{ LOGIN_DELAY_MAX: '3600', LOGIN_FAILURE_MEMORY: '600' }, 'LOGIN_FAILURE_MEMORY'],
      [{ LOGIN_MAX_FAILURES_PER_EMAIL: '5' }, 'LOGIN_MAX_FAILURES_PER_EMAIL'],
      [{ LOGIN_MAX_FAILURES_PER_CLIENT: '100' }, 'LOGIN_MAX_FAILURES_PER_CLIENT'],
      [{ LOGIN_FAILURE_WINDOW: '900' }, 'LOGIN_FAILURE_WINDOW'],
      [{ LOGIN_DELAY_AFTER_FAILURES: '0' }, 'LOGIN_DELAY_AFTER_FAILURES'],
      [{ PASSWORD_HASH_CONCURRENCY: '0' }, 'PASSWORD_HASH_CONCURRENCY'],
      [{ PASSWORD_HASH_PER_ACCOUNT: 'many' }, 'PASSWORD_HASH_PER_ACCOUNT'],
      [{ PASSWORD_HASH_MAX_WAIT_MS: '50' }, 'PASSWORD_HASH_MAX_WAIT_MS'],
    ];
    for (const [env, variable] of cases) {
      let error: unknown;
      try {
        loadSignInSettings(env);
      } catch (thrown) {
        error = thrown;
      }
      expect(error, JSON.stringify(env)).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).variable).to.equal(variable);
    }
  });
});

describe('readExtensionsDir (PG_EXTENSIONS_DIR)', () => {
  it('is .data/pg-extensions-18 of the working folder unless set, and a relative value is taken from there too', () => {
    expect(readExtensionsDir({}, '/srv/platform')).to.equal('/srv/platform/.data/pg-extensions-18');
    expect(readExtensionsDir({ PG_EXTENSIONS_DIR: 'ext' }, '/srv/platform')).to.equal('/srv/platform/ext');
    expect(readExtensionsDir({ PG_EXTENSIONS_DIR: '/opt/pg-extensions' }, '/srv/platform')).to.equal('/opt/pg-extensions');
  });
});
