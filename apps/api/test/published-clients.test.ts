import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { createCertificateAuthority, issueServerCertificate } from '@platform/dev-tls';
import { eventually, freePort, httpClient } from '@platform/testing';
import { signInAt, signUpDeveloper, startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';

const MCP_DRIVER = fileURLToPath(new URL('./support/mcp-driver.mjs', import.meta.url));

/**
 * Runs a program to its end without blocking this process, which serves the API it talks to.
 * Answers its exit status (a number even on failure) and what it printed.
 */
function run(file: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { ...options, encoding: 'utf8', timeout: 60_000, maxBuffer: 10_000_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ status: code, stdout, stderr });
    });
  });
}

/** The command line tool's PKCE pair and state, made as it makes them. */
function cliSecrets() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url'), state: randomBytes(4).toString('hex') };
}

interface McpResult {
  content: { type: string; text: string }[];
  isError: boolean;
}

/**
 * The API family's own clients against this platform over HTTPS: the MCP server package's tool
 * functions, the command line tool's sign-in replayed request by request, and what curl and Node
 * trust. Both apps and a gateway run with a certificate from a development CA made here.
 */
describe('the API family’s published clients, over HTTPS', function () {
  this.timeout(120_000);
  let p: TestPlatform;
  let dir: string;
  let caPath: string;
  let api: RunningApi;
  let oauth: AppProcess;
  let gateway: AppProcess;
  let gatewayPort: number;
  let base: string;
  let issuer: string;

  before(async function () {
    p = await platform();
    dir = mkdtempSync(join(tmpdir(), 'published-clients-'));
    const ca = await createCertificateAuthority();
    const server = await issueServerCertificate(ca, { hosts: ['127.0.0.1', 'localhost'] });
    caPath = join(dir, 'ca.crt');
    writeFileSync(caPath, ca.cert);
    writeFileSync(join(dir, 'server.crt'), server.cert);
    writeFileSync(join(dir, 'server.key'), server.key, { mode: 0o600 });
    // This process trusts the CA as a user's would with NODE_EXTRA_CA_CERTS (Node reads that only at start).
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), ca.cert]);

    const [apiPort, oauthPort] = [await freePort(), await freePort()];
    gatewayPort = await freePort();
    base = `https://127.0.0.1:${apiPort}`;
    issuer = `https://127.0.0.1:${oauthPort}`;
    const certs = { cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
    const env = {
      ...p.env,
      API_PORT: String(apiPort),
      PUBLIC_BASE_URL: base,
      PUBLIC_API_URL: base,
      OAUTH_ISSUER: issuer,
      API_TLS_CERT: certs.cert,
      API_TLS_KEY: certs.key,
      OAUTH_TLS_CERT: certs.cert,
      OAUTH_TLS_KEY: certs.key,
      GATEWAY_PORT: String(gatewayPort),
      GATEWAY_TLS_CERT: certs.cert,
      GATEWAY_TLS_KEY: certs.key,
    };
    oauth = await startAppProcess('apps/oauth/src/main.ts', { portVariable: 'OAUTH_PORT', port: oauthPort, env, https: true });
    gateway = await startAppProcess('apps/gateway/src/main.ts', { portVariable: 'GATEWAY_ADMIN_PORT', env: { ...env, GATEWAY_ALLOW_PLAIN: 'false' } });
    api = await startApi(loadApiConfig(env));
  });

  after(async function () {
    this.timeout(90_000);
    await api?.close();
    await oauth?.stop();
    await gateway?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The command line tool's sign-in, request by request: /authorize on the token service, the form, the loopback callback, the token at {base_url}. */
  async function cliSignIn(credentials: { email: string; password: string }) {
    const port = await freePort();
    const redirectUri = `http://localhost:${port}/callback`;
    const { verifier, challenge, state } = cliSecrets();
    const query = new URLSearchParams({ client_id: 'nilecli', state, response_type: 'code', redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256' });
    const signedIn = await signInAt(`${issuer}/authorize?${query}`, credentials);
    expect(signedIn.status, signedIn.html).to.equal(303);
    const callback = new URL(signedIn.location!);
    expect(`${callback.origin}${callback.pathname}`).to.equal(redirectUri);
    expect(callback.searchParams.get('state')).to.equal(state);
    const form = new URLSearchParams({ grant_type: 'authorization_code', code: callback.searchParams.get('code')!, client_id: 'nilecli', code_verifier: verifier, redirect_uri: redirectUri });
    return { form, token: (endpoint: string) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() }) };
  }

  async function developerToken() {
    const credentials = await signUpDeveloper(issuer);
    const response = await (await cliSignIn(credentials)).token(`${base}/oauth2/token`);
    expect(response.status).to.equal(200);
    const body = (await response.json()) as { access_token: string; token_type: string };
    return { ...credentials, token: body.access_token };
  }

  it('serves both apps over HTTPS that curl and Node trust with the development CA, and refuse without it', async function () {
    for (const url of [`${base}/healthz`, `${issuer}/healthz`]) {
      const trusted = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', caPath, url]);
      expect(trusted.stdout, trusted.stderr).to.equal('200');
      const untrusted = await run('curl', ['-sS', '-o', '/dev/null', url]);
      expect(untrusted.status, url).to.equal(60);
      expect(untrusted.stderr).to.match(/SSL certificate problem/);

      // Written as plain text: console.log colours numbers where FORCE_COLOR is set (as under CI).
      const probe = `fetch(${JSON.stringify(url)}).then((r) => process.stdout.write(String(r.status)), (e) => process.stdout.write(String(e.cause?.code ?? e.message)))`;
      const plainEnv = { ...process.env };
      delete plainEnv.NODE_EXTRA_CA_CERTS;
      const nodeTrusted = await run(process.execPath, ['-e', probe], { env: { ...plainEnv, NODE_EXTRA_CA_CERTS: caPath } });
      expect(nodeTrusted.stdout.trim(), nodeTrusted.stderr).to.equal('200');
      const nodeUntrusted = await run(process.execPath, ['-e', probe], { env: plainEnv });
      expect(nodeUntrusted.stdout.trim()).to.be.oneOf(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']);
    }
  });

  it('signs the command line tool in as it does it, and its token lists the workspaces and databases', async function () {
    const credentials = await signUpDeveloper(issuer);
    const signIn = await cliSignIn(credentials);
    const response = await signIn.token(`${base}/oauth2/token`);
    expect(response.status).to.equal(200);
    const tokens = (await response.json()) as Record<string, unknown>;
    expect(tokens).to.include({ token_type: 'Bearer', scope: 'api:read api:write' });
    const request = httpClient(base);
    const token = tokens.access_token as string;

    const me = await request('GET', '/developers/me', { token });
    expect(me.status, me.text).to.equal(200);
    expect(me.body).to.deep.include({ email: credentials.email, name: 'Test developer', workspaces: [] });
    const slug = `cli-${randomBytes(3).toString('hex')}`;
    expect((await request('POST', '/workspaces', { token, json: { name: 'CLI workspace', slug } })).status).to.equal(201);
    expect(((await request('GET', '/workspaces', { token })).body as { slug: string }[]).map((workspace) => workspace.slug)).to.deep.equal([slug]);
    expect(((await request('GET', '/developers/me', { token })).body.workspaces as { slug: string }[]).map((workspace) => workspace.slug)).to.deep.equal([slug]);
    const databases = await request('GET', `/workspaces/${slug}/databases`, { token });
    expect(databases.status).to.equal(200);
    expect(databases.body).to.deep.equal([]);

    // The same code again, at either token endpoint: the same refusal, word for word.
    const [atBase, atIssuer] = [await signIn.token(`${base}/oauth2/token`), await signIn.token(`${issuer}/oauth2/token`)];
    expect(atBase.status).to.equal(400);
    expect(atIssuer.status).to.equal(400);
    expect(await atBase.json()).to.deep.equal(await atIssuer.json());
  });

  it('runs the MCP server package’s own tools against it: databases, a credential, a connection string, SQL through the gateway', async function () {
    const developer = await developerToken();
    const request = httpClient(base);
    const slug = `mcp-${randomBytes(3).toString('hex')}`;
    expect((await request('POST', '/workspaces', { token: developer.token, json: { name: 'MCP workspace', slug } })).status).to.equal(201);
    const name = `mcp_${randomBytes(3).toString('hex')}`;
    const context = { baseUrl: base, apiKey: developer.token, workspaceSlug: slug };
    const drive = async (steps: object[]): Promise<McpResult[]> => {
      const scratch = mkdtempSync(join(dir, 'mcp-'));
      const done = await run(process.execPath, [MCP_DRIVER, JSON.stringify({ context, steps })], {
        cwd: scratch,
        env: { ...process.env, NODE_EXTRA_CA_CERTS: caPath, LOG_LEVEL: 'error' },
      });
      expect(done.status, done.stderr).to.equal(0);
      return JSON.parse(done.stdout) as McpResult[];
    };
    const expectSuccess = (results: McpResult[]) => {
      for (const result of results) expect(result.isError, result.content[0].text).to.equal(false);
    };

    const created = await drive([{ tool: 'createDatabase', args: { name, region: 'AWS_US_WEST_2' } }, { tool: 'listDatabases' }, { tool: 'getDatabase', args: { name } }]);
    expectSuccess(created);
    expect(created[0].content[0].text).to.match(new RegExp(`^Database "${name}" created successfully with ID [0-9a-f-]{36} in region AWS_US_WEST_2`));
    expect(created[1].content[0].text).to.include(name);
    await eventually(async () => ((await request('GET', `/workspaces/${slug}/databases/${name}`, { token: developer.token })).body?.status === 'READY' ? true : undefined), 20_000, 'READY');

    const used = await drive([
      { tool: 'getConnectionString', args: { databaseName: name } },
      { tool: 'executeSQL', args: { databaseName: name, query: 'select 40 + 2 as answer, current_database() = current_database() as same' }, gateway: `127.0.0.1:${gatewayPort}` },
      { tool: 'deleteDatabase', args: { name } },
    ]);
    expectSuccess(used);
    expect(used[0].content[0].text).to.match(/^Connection string:\npostgres:\/\/[^:]+:[^@]+@us-west-2\.db\.thenile\.dev:5432\//);
    expect(used[1].content[0].text).to.equal('| answer | same |\n|---|---|\n| 42 | true |\n\n1 rows returned.');
    expect(used[2].content[0].text).to.equal(`Database "${name}" has been successfully deleted.`);
    expect((await request('GET', `/workspaces/${slug}/databases`, { token: developer.token })).body).to.deep.equal([]);
  });
});
