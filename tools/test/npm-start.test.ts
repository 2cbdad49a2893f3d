import { expect } from 'chai';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readExtensionsDir } from '@platform/config';
import { isPortFree } from '@platform/postgres-launcher';
import { eventually, httpClient, query } from '@platform/testing';
import { gatewayTlsHandshake, platformEnv, startPlatform } from './platform-runner.js';

/**
 * Runs `tools/login.ts`, signs in at the address it prints (the page, then the form), lets the
 * browser-side redirect reach its loopback listener, and answers the token it prints.
 */
async function runLogin(env: NodeJS.ProcessEnv, credentials: { email: string; password: string }): Promise<{ token: string; scope: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/login.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const address = await eventually(async () => /^\s+(http:\/\/\S+\/oauth2\/authorize\?\S+)$/m.exec(output)?.[1], 20_000, 'the sign-in address');
    const page = await fetch(address);
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
    const fields: Record<string, string> = { email: credentials.email, password: credentials.password };
    for (const match of (await page.text()).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[match[1]] = match[2].replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    }
    const signedIn = await fetch(new URL('/oauth2/authorize', address), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams(fields).toString(),
    });
    expect(signedIn.status).to.equal(303);
    expect((await fetch(signedIn.headers.get('location')!)).status).to.equal(200);
    expect(await exited, output).to.equal(0);
    const token = /export TOKEN=(\S+)/.exec(output)?.[1];
    const scope = /scope: (.+)$/m.exec(output)?.[1];
    if (!token || !scope) throw new Error(`npm run login printed no token:\n${output}`);
    return { token, scope };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * After a synchronous child process, which held this process's event loop: lets fetch's timers
 * retire the keep-alive sockets the apps closed meanwhile (after 5 s idle), before a request
 * could be sent on one of them and find it closed.
 */
function afterBlocking(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 50));
}

describe('npm start', function () {
  this.timeout(120_000);
  let dir: string | undefined;
  const started: ChildProcess[] = [];

  after(function () {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('starts on embedded PostgreSQL, prints a working token, stops cleanly, and reuses its data', async function () {
    const prepared = await platformEnv();
    dir = prepared.dir;
    // As a user starts it: the embedded cluster archives its WAL and the API backs it up.
    const env = { ...prepared.env, BACKUPS: 'on' };
    // The commands that reach a running platform find its ports by themselves: they are told only
    // where the local state is, as they would be in a clone whose `.data` it is.
    const toolEnv: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: env.EMBEDDED_PG_DIR };
    for (const name of ['API_PORT', 'OAUTH_PORT', 'EMBEDDED_PG_PORT', 'OAUTH_ISSUER', 'DATABASE_URL']) delete toolEnv[name];
    const api = httpClient(`http://127.0.0.1:${env.API_PORT}`);
    const oauth = httpClient(`http://127.0.0.1:${env.OAUTH_PORT}`);
    const gatewayAdmin = httpClient(`http://127.0.0.1:${env.GATEWAY_ADMIN_PORT}`);
    const caPath = join(prepared.dir, 'tls', 'ca.crt');

    // A start killed with SIGKILL left its lock behind; its process is gone, so this start takes it over.
    const lock = join(prepared.dir, 'start.lock');
    writeFileSync(lock, `${spawnSync('true').pid}\n`);
    const first = await startPlatform(env);
    started.push(first.child);
    expect(readFileSync(lock, 'utf8')).to.equal(`${first.child.pid}\n`);
    expect(first.output()).to.include(`http://127.0.0.1:${env.API_PORT}/openapi.json`);
    expect((await api('GET', '/healthz')).status).to.equal(200);
    expect((await api('GET', '/readyz')).status).to.equal(200);
    expect((await oauth('GET', '/.well-known/jwks.json')).body.keys).to.have.length(1);
    // The PostgreSQL gateway answers TLS with a certificate from the development CA npm start made in .data/tls.
    expect((await gatewayAdmin('GET', '/healthz')).status).to.equal(200);
    const ca = readFileSync(caPath, 'utf8');
    expect(await gatewayTlsHandshake(Number(env.GATEWAY_PORT), ca)).to.deep.equal({ answer: 'S', authorized: true, subject: 'CN=localhost' });
    expect(statSync(join(prepared.dir, 'tls')).mode & 0o777).to.equal(0o700);
    expect(statSync(join(prepared.dir, 'tls', 'server.key')).mode & 0o777).to.equal(0o600);
    expect(first.output()).to.include(`PostgreSQL gateway          postgres://127.0.0.1:${env.GATEWAY_PORT}   Admin: http://127.0.0.1:${env.GATEWAY_ADMIN_PORT}/healthz`);
    // The pooled endpoint is on under npm start, with the same certificate.
    expect(first.output()).to.include(`Pooled endpoint             postgres://127.0.0.1:${env.GATEWAY_POOLED_PORT}   Transaction pooling`);
    expect(await gatewayTlsHandshake(Number(env.GATEWAY_POOLED_PORT), ca)).to.deep.equal({ answer: 'S', authorized: true, subject: 'CN=localhost' });
    expect(first.output()).to.include(`psql "postgres://<id>:<password>@127.0.0.1:${env.GATEWAY_PORT}/app?sslmode=verify-full&sslrootcert=${caPath}"`);
    const workspaces = await api('GET', '/workspaces', { token: first.token });
    expect(workspaces.status).to.equal(200);
    expect(workspaces.body.map((w: { slug: string }) => w.slug)).to.deep.equal(['default']);
    const created = await api('POST', '/workspaces/default/databases', { token: first.token, json: { databaseName: 'kept', region: 'AWS_US_WEST_2' } });
    expect(created.status).to.equal(201);
    // The token came from the token service (client_credentials); the secret is kept for `npm run token` only.
    const credentialsFile = join(prepared.dir, 'local-credentials.json');
    expect(statSync(credentialsFile).mode & 0o777).to.equal(0o600);
    // The running platform's addresses (and the control plane's URL, a secret) sit beside it, as private.
    const runningFile = join(prepared.dir, 'running-platform.json');
    expect(statSync(runningFile).mode & 0o777).to.equal(0o600);
    // The signing keys are sealed at rest with a ring npm start made beside them, as private.
    expect(statSync(join(prepared.dir, 'signing-key-secret-keys')).mode & 0o777).to.equal(0o600);
    const { databaseUrl } = JSON.parse(readFileSync(runningFile, 'utf8')) as { databaseUrl: string };
    const privateHalves = () => query<{ private_jwk: unknown; sealed_private_jwk: string }>(databaseUrl, 'select private_jwk, sealed_private_jwk from signing_keys');
    for (const row of await privateHalves()) expect(row).to.deep.include({ private_jwk: null }).and.to.have.property('sealed_private_jwk').that.matches(/^v1\.local1\./);
    // npm start installs pgvector (tools/pg-extensions.mjs) before it starts the shared cluster, which offers it.
    const extensions = readExtensionsDir({});
    if (process.env.CI === 'true' || existsSync(join(extensions, 'lib', 'vector.so'))) {
      expect(await query(databaseUrl, "select name from pg_available_extensions where name = 'vector'")).to.deep.equal([{ name: 'vector' }]);
    } else {
      console.log(`      not checked: pgvector is not in ${extensions}, and the shared cluster cannot offer it`);
    }
    // Backups (README "Backups"): into `backups` beside the cluster's folder, a first full one at once.
    expect(first.output()).to.include(`WAL archived and backed up to ${join(prepared.dir, 'backups')}`);
    const backedUp = await eventually(async () => {
      const [backups] = (await api('GET', '/readyz')).body.backups;
      return backups.lastBackup ? backups : undefined;
    }, 60_000, 'the first base backup');
    expect(backedUp).to.deep.include({ archiving: 'ok', managed: true, walGap: false });
    expect(backedUp.lastBackup.type).to.equal('full');
    const fresh = execFileSync(process.execPath, ['--import', 'tsx', 'tools/dev-token.ts'], { env: toolEnv, encoding: 'utf8' }).trim();
    await afterBlocking();
    expect(fresh).to.not.equal(first.token);
    expect((await api('GET', '/workspaces/default', { token: fresh })).status).to.equal(200);
    // `npm run login`: the first-party CLI client, completed here by submitting the sign-in page
    // with the default developer's password, as a person would in a browser.
    const { developer } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as { developer: { email: string; password: string } };
    const login = await runLogin(toolEnv, developer);
    expect(login.scope).to.equal('api:read api:write');
    expect((await api('GET', '/workspaces', { token: login.token })).body.map((w: { slug: string }) => w.slug)).to.deep.equal(['default']);
    // The printed token is the workspace client's; developer-only routes want the developer's, as the output says.
    expect(first.output()).to.include('sign in as a developer with `npm run login`');
    const byClient = await api('POST', '/workspaces', { token: first.token, json: { name: 'Second' } });
    expect(byClient.status).to.equal(403);
    expect(byClient.body.errorCode).to.equal('developer_token_required');
    expect((await api('POST', '/workspaces', { token: login.token, json: { name: 'Second' } })).status).to.equal(201);
    // `npm run keys:rotate`: the new key is published at once; tokens of the old one keep working.
    const rotated = execFileSync(process.execPath, ['--import', 'tsx', 'tools/rotate-keys.ts'], { env: toolEnv, encoding: 'utf8' });
    await afterBlocking();
    const newKid = /New signing key (\S+):/.exec(rotated)?.[1];
    expect(newKid, rotated).to.be.a('string');
    const published = await eventually(async () => {
      const keys = (await oauth('GET', '/.well-known/jwks.json')).body.keys as { kid: string }[];
      return keys.length === 2 ? keys.map((key) => key.kid) : undefined;
    }, 40_000, 'the rotated key to be published');
    expect(published).to.include(newKid);
    // keys:rotate sealed the new key with the same ring.
    expect((await privateHalves()).map((row) => [row.private_jwk, row.sealed_private_jwk.split('.')[1]])).to.deep.equal([
      [null, 'local1'],
      [null, 'local1'],
    ]);
    expect((await api('GET', '/workspaces/default', { token: first.token })).status).to.equal(200);

    // A second start in the same place leaves the running one alone and says why.
    const twice = spawnSync(process.execPath, ['--import', 'tsx', 'tools/start.ts'], { env: { ...toolEnv, ...env }, encoding: 'utf8', timeout: 30_000 });
    expect(twice.status).to.equal(1);
    expect(twice.stderr).to.equal(`npm start failed: the platform is already running (process ${first.child.pid}, API http://127.0.0.1:${env.API_PORT}); stop it first\nStopped.\n`);
    await afterBlocking();
    expect((await api('GET', '/healthz')).status).to.equal(200);

    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);
    expect(existsSync(join(env.EMBEDDED_PG_DIR, 'data', 'postmaster.pid')), 'postgres still running').to.equal(false);
    expect(existsSync(runningFile), 'the record of a stopped platform').to.equal(false);
    expect(existsSync(lock), 'the lock of a stopped platform').to.equal(false);
    await api('GET', '/healthz').then(
      () => expect.fail('the API still answers after SIGTERM'),
      (error: Error) => expect(error.message).to.match(/fetch failed/),
    );
    expect([await isPortFree(Number(env.GATEWAY_PORT)), await isPortFree(Number(env.GATEWAY_ADMIN_PORT)), await isPortFree(Number(env.GATEWAY_POOLED_PORT))], 'the gateway\'s ports after the stop').to.deep.equal([true, true, true]);

    const second = await startPlatform(env);
    started.push(second.child);
    // The first run's token still works: keys and data survived the restart.
    const again = await api('GET', '/workspaces/default/databases', { token: first.token });
    expect(again.status).to.equal(200);
    expect(again.body.map((d: { id: string }) => d.id)).to.deep.equal([created.body.id]);
    expect(second.output()).not.to.include('applied migrations');
    // Its banner knows the data: it lists what is there and creates under a name that is free.
    expect(second.output()).to.include("Workspace 'default' has databases from an earlier start (kept): list them, and create");
    expect(second.output()).to.include(`-d '{"databaseName":"app","region":"AWS_US_WEST_2"}' http://127.0.0.1:${env.API_PORT}/workspaces/default/databases`);
    // The development CA is kept, so clients that trust it keep working.
    expect(readFileSync(caPath, 'utf8')).to.equal(ca);
    expect(second.output()).to.include(`development CA kept in ${join(prepared.dir, 'tls')}`);
    expect((await gatewayTlsHandshake(Number(env.GATEWAY_PORT), ca)).authorized).to.equal(true);

    second.child.kill('SIGINT');
    expect(await second.exited).to.equal(0);
    expect(existsSync(join(env.EMBEDDED_PG_DIR, 'data', 'postmaster.pid'))).to.equal(false);
  });
});
