import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, httpClient } from '@platform/testing';

interface Started {
  child: ChildProcess;
  output: () => string;
  token: string;
  exited: Promise<number | NodeJS.Signals | null>;
}

/** Runs `npm start`'s script as a user would, with its own folder and ports. */
async function startPlatform(env: Record<string, string>): Promise<Started> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, LOG_LEVEL: 'warn' };
  delete childEnv.DATABASE_URL; // this test is about the embedded default
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/start.ts'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const deadline = Date.now() + 60_000;
  while (!output.includes('The platform is up')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const token = /export TOKEN=(\S+)/.exec(output)?.[1];
  if (!token) throw new Error(`no token printed:\n${output}`);
  return { child, output: () => output, token, exited };
}

/**
 * Runs `tools/login.ts`, signs in at the address it prints (the page, then the form), lets the
 * browser-side redirect reach its loopback listener, and answers the token it prints.
 */
async function runLogin(env: Record<string, string>, credentials: { email: string; password: string }): Promise<{ token: string; scope: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/login.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

describe('npm start', function () {
  this.timeout(120_000);
  let dir: string;
  const started: ChildProcess[] = [];

  before(function () {
    dir = mkdtempSync(join(tmpdir(), 'platform-start-'));
    chmodSync(dir, 0o755);
  });

  after(function () {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts on embedded PostgreSQL, prints a working token, stops cleanly, and reuses its data', async function () {
    const env = {
      EMBEDDED_PG_DIR: join(dir, 'postgres'),
      EMBEDDED_PG_PORT: String(await freePort()),
      API_PORT: String(await freePort()),
      OAUTH_PORT: String(await freePort()),
    };
    const api = httpClient(`http://127.0.0.1:${env.API_PORT}`);
    const oauth = httpClient(`http://127.0.0.1:${env.OAUTH_PORT}`);

    const first = await startPlatform(env);
    started.push(first.child);
    expect(first.output()).to.include(`http://127.0.0.1:${env.API_PORT}/openapi.json`);
    expect((await api('GET', '/healthz')).status).to.equal(200);
    expect((await api('GET', '/readyz')).status).to.equal(200);
    expect((await oauth('GET', '/.well-known/jwks.json')).body.keys).to.have.length(1);
    const workspaces = await api('GET', '/workspaces', { token: first.token });
    expect(workspaces.status).to.equal(200);
    expect(workspaces.body.map((w: { slug: string }) => w.slug)).to.deep.equal(['default']);
    const created = await api('POST', '/workspaces/default/databases', { token: first.token, json: { databaseName: 'kept', region: 'AWS_US_WEST_2' } });
    expect(created.status).to.equal(201);
    // The token came from the token service (client_credentials); the secret is kept for `npm run token` only.
    const credentialsFile = join(dir, 'local-credentials.json');
    expect(statSync(credentialsFile).mode & 0o777).to.equal(0o600);
    const fresh = execFileSync(process.execPath, ['--import', 'tsx', 'tools/dev-token.ts'], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim();
    expect(fresh).to.not.equal(first.token);
    expect((await api('GET', '/workspaces/default', { token: fresh })).status).to.equal(200);
    // `npm run login`: the first-party CLI client, completed here by submitting the sign-in page
    // with the default developer's password, as a person would in a browser.
    const { developer } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as { developer: { email: string; password: string } };
    const login = await runLogin(env, developer);
    expect(login.scope).to.equal('api:read api:write');
    expect((await api('GET', '/workspaces', { token: login.token })).body.map((w: { slug: string }) => w.slug)).to.deep.equal(['default']);
    // `npm run keys:rotate`: the new key is published at once; tokens of the old one keep working.
    const rotated = execFileSync(process.execPath, ['--import', 'tsx', 'tools/rotate-keys.ts'], { env: { ...process.env, ...env }, encoding: 'utf8' });
    const newKid = /New signing key (\S+):/.exec(rotated)?.[1];
    expect(newKid, rotated).to.be.a('string');
    const published = await eventually(async () => {
      const keys = (await oauth('GET', '/.well-known/jwks.json')).body.keys as { kid: string }[];
      return keys.length === 2 ? keys.map((key) => key.kid) : undefined;
    }, 40_000, 'the rotated key to be published');
    expect(published).to.include(newKid);
    expect((await api('GET', '/workspaces/default', { token: first.token })).status).to.equal(200);

    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);
    expect(existsSync(join(env.EMBEDDED_PG_DIR, 'data', 'postmaster.pid')), 'postgres still running').to.equal(false);
    await api('GET', '/healthz').then(
      () => expect.fail('the API still answers after SIGTERM'),
      (error: Error) => expect(error.message).to.match(/fetch failed/),
    );

    const second = await startPlatform(env);
    started.push(second.child);
    // The first run's token still works: keys and data survived the restart.
    const again = await api('GET', '/workspaces/default/databases', { token: first.token });
    expect(again.status).to.equal(200);
    expect(again.body.map((d: { id: string }) => d.id)).to.deep.equal([created.body.id]);
    expect(second.output()).not.to.include('applied migrations');

    second.child.kill('SIGINT');
    expect(await second.exited).to.equal(0);
    expect(existsSync(join(env.EMBEDDED_PG_DIR, 'data', 'postmaster.pid'))).to.equal(false);
  });
});
