import { expect } from 'chai';
import { execFile, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { platformEnv, startPlatform } from './platform-runner.js';

const run = promisify(execFile);

/** curl's exit status and what it printed; 60 is its "certificate not trusted". */
async function curl(args: string[]): Promise<{ status: number; stdout: string }> {
  try {
    const { stdout } = await run('curl', ['-sS', ...args], { encoding: 'utf8' });
    return { status: 0, stdout };
  } catch (error) {
    return { status: (error as { code: number }).code, stdout: (error as { stdout: string }).stdout };
  }
}

describe('npm start with PLATFORM_HTTPS=true', function () {
  this.timeout(120_000);
  let dir: string | undefined;
  let child: ChildProcess | undefined;

  after(function () {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves both apps over https with the development CA, prints how to trust it, and its own tools trust it', async function () {
    const prepared = await platformEnv();
    dir = prepared.dir;
    const { env } = prepared;
    const started = await startPlatform({ ...env, PLATFORM_HTTPS: 'true' });
    child = started.child;
    const caPath = join(dir, 'tls', 'ca.crt');
    const api = `https://127.0.0.1:${env.API_PORT}`;
    const issuer = `https://127.0.0.1:${env.OAUTH_PORT}`;
    expect(started.output()).to.include(`API ({base_url}, {api_url}) ${api}   OpenAPI: ${api}/openapi.json`);
    expect(started.output()).to.include(`Token service               ${issuer}`);
    expect(started.output()).to.include(`curl --cacert ${caPath} ...        export NODE_EXTRA_CA_CERTS=${caPath}`);

    for (const url of [`${api}/healthz`, `${issuer}/healthz`]) {
      expect(await curl(['-o', '/dev/null', '-w', '%{http_code}', '--cacert', caPath, url])).to.deep.equal({ status: 0, stdout: '200' });
      expect((await curl(['-o', '/dev/null', url])).status, url).to.equal(60);
    }
    const listed = await curl(['--cacert', caPath, '-H', `Authorization: Bearer ${started.token}`, `${api}/workspaces`]);
    expect((JSON.parse(listed.stdout) as { slug: string }[]).map((workspace) => workspace.slug)).to.deep.equal(['default']);
    // The banner's own commands work as printed, pasted into a shell after its `export TOKEN=...`.
    const printed = started.output().replace(/\\\n\s+/g, '').split('\n').map((line) => line.trim());
    const exportLine = printed.find((line) => line.startsWith('export TOKEN='))!;
    const listLine = printed.find((line) => line.startsWith('curl ') && line.endsWith(`${api}/workspaces`))!;
    const createLine = printed.find((line) => line.startsWith('curl ') && line.includes('"databaseName":"app"'))!;
    for (const line of [listLine, createLine]) expect(line).to.include(`--cacert ${caPath} `);
    const pasted = await run('bash', ['-c', `${exportLine}\n${listLine}\necho\n${createLine}`], { encoding: 'utf8' });
    const [workspaces, database] = pasted.stdout.trim().split('\n').map((line) => JSON.parse(line)) as [{ slug: string }[], { name: string; status: string }];
    expect(workspaces.map((workspace) => workspace.slug)).to.deep.equal(['default']);
    expect(database).to.include({ name: 'app', status: 'REQUESTED' });

    // `npm run token` finds the running platform and trusts its CA by itself.
    const toolEnv: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: env.EMBEDDED_PG_DIR };
    for (const name of ['API_PORT', 'OAUTH_PORT', 'EMBEDDED_PG_PORT', 'OAUTH_ISSUER', 'DATABASE_URL', 'NODE_EXTRA_CA_CERTS']) delete toolEnv[name];
    const fresh = (await run(process.execPath, ['--import', 'tsx', 'tools/dev-token.ts'], { env: toolEnv, encoding: 'utf8' })).stdout.trim();
    const byFresh = await curl(['-o', '/dev/null', '-w', '%{http_code}', '--cacert', caPath, '-H', `Authorization: Bearer ${fresh}`, `${api}/workspaces/default`]);
    expect(byFresh).to.deep.equal({ status: 0, stdout: '200' });

    child.kill('SIGTERM');
    expect(await started.exited).to.equal(0);
  });
});
