import { expect } from 'chai';
import { loadPlatformConfig } from '@platform/config';
import { banner, freshDatabaseName, type BannerFacts } from '../banner.js';

const CA = '/srv/platform/.data/tls/ca.crt';

function facts(overrides: Partial<BannerFacts> = {}, env: Record<string, string> = {}): BannerFacts {
  return {
    config: loadPlatformConfig({ DATABASE_URL: 'postgres://platform@127.0.0.1:4100/control_plane', API_PORT: '4101', OAUTH_PORT: '4102', GATEWAY_PORT: '4104', ...env }),
    where: 'embedded PostgreSQL on 127.0.0.1:4100',
    token: { access_token: 'eyJ.token', expires_in: 3600 },
    credentials: { developer: { email: 'dev@localhost', password: 'secret-password' }, client: { client_id: 'cli_abc', client_secret: 'client-secret' } },
    credentialsPath: '/srv/platform/.data/local-credentials.json',
    gateway: { adminUrl: 'http://127.0.0.1:4103', caCert: CA, madeAuthority: false },
    serverMajor: 18,
    ...overrides,
  };
}

/** The printed commands: every line that runs curl, with its continuation. */
function curlCommands(text: string): string[] {
  return text
    .replace(/\\\n\s+/g, '')
    .split('\n')
    .map((line) => line.replace(/^.*?(?=curl )/, ''))
    .filter((line) => line.startsWith('curl '));
}

describe('the start banner', function () {
  it('prints plain curl commands over http, the first database as app', function () {
    const text = banner(facts());
    const commands = curlCommands(text);
    expect(commands).to.have.length(5);
    for (const command of commands) expect(command).to.match(/^curl -s -/).and.not.to.include('--cacert');
    expect(commands).to.include(`curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"databaseName":"app","region":"AWS_US_WEST_2"}' http://127.0.0.1:4101/workspaces/default/databases`);
    expect(text).not.to.include('earlier start');
  });

  it('names the web console, where the developer it prints signs in', function () {
    expect(banner(facts())).to.include('  Web console                 http://127.0.0.1:4101/console   Sign in as the developer below\n');
  });

  it('names the development mail catcher when the platform runs one', function () {
    const text = banner(facts({ mailCatcher: { url: 'smtp://127.0.0.1:4104', dir: '/srv/platform/.data/mail' } }));
    expect(text).to.include('  Mail (development catcher)  smtp://127.0.0.1:4104   `npm run mail` prints the latest (/srv/platform/.data/mail)\n');
    expect(banner(facts())).not.to.include('Mail (development catcher)');
  });

  it('puts the CA into every curl command under PLATFORM_HTTPS, so each works as printed', function () {
    const https = { PUBLIC_BASE_URL: 'https://127.0.0.1:4101', OAUTH_ISSUER: 'https://127.0.0.1:4102' };
    const text = banner(facts({ httpsCaCert: CA }, https));
    const commands = curlCommands(text);
    expect(commands).to.have.length(6); // and the hint "curl --cacert ... ..."
    for (const command of commands) expect(command).to.match(new RegExp(`^curl (-s )?--cacert ${CA} `));
    expect(commands).to.include(`curl -s --cacert ${CA} -H "Authorization: Bearer $TOKEN" https://127.0.0.1:4101/workspaces`);
    expect(commands).to.include(`curl -s --cacert ${CA} -u 'cli_abc:<secret>' -d grant_type=client_credentials https://127.0.0.1:4102/oauth2/token`);
  });

  it('quotes a CA path that a shell would split', function () {
    const https = { PUBLIC_BASE_URL: 'https://127.0.0.1:4101', OAUTH_ISSUER: 'https://127.0.0.1:4102' };
    const text = banner(facts({ httpsCaCert: "/home/ada/my platform/it's/ca.crt" }, https));
    expect(text).to.include(`curl -s --cacert '/home/ada/my platform/it'\\''s/ca.crt' -H "Authorization: Bearer $TOKEN" https://127.0.0.1:4101/workspaces`);
  });

  it('on existing data, lists the databases and creates one under a name not taken, not one that answers 409', function () {
    const text = banner(facts({ existingDatabases: ['app', 'app_2', 'orders'] }));
    expect(text).to.include("Workspace 'default' has databases from an earlier start (app, app_2, orders): list them, and create\nanother under a name not taken yet:\n");
    expect(text).to.include('curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:4101/workspaces/default/databases\n');
    expect(text).to.include(`-d '{"databaseName":"app_3","region":"AWS_US_WEST_2"}'`);
    expect(text).to.include('http://127.0.0.1:4101/workspaces/default/databases/app_3/credentials');
    expect(text).to.include('@127.0.0.1:4104/app_3?sslmode=verify-full');
    expect(text).not.to.match(/"databaseName":"app"/);
  });

  it('names the psql needed for the server’s major', function () {
    expect(banner(facts())).to.include('Use psql 18 or newer (`psql --version`): the server is PostgreSQL 18, and an older psql cannot run\n\\l and other');
    expect(banner(facts({ serverMajor: 17 }))).to.include('Use psql 17 or newer');
  });

  it('picks app, then app_2, app_3... for a fresh name', function () {
    expect(freshDatabaseName([])).to.equal('app');
    expect(freshDatabaseName(['orders'])).to.equal('app');
    expect(freshDatabaseName(['app'])).to.equal('app_2');
    expect(freshDatabaseName(['app', 'app_2', 'app_4'])).to.equal('app_3');
  });
});
