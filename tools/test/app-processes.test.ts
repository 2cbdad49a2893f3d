import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from '@platform/postgres-launcher';
import { eventually } from '@platform/testing';
import { AppProcesses } from '../app-processes.js';

// Apps of a few lines, supervised as `npm start` supervises apps/api, apps/oauth and apps/gateway.
describe('AppProcesses: crashed apps', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'app-processes-'));
  const entry = (name: string, code: string) => {
    writeFileSync(join(dir, name), code);
    return join(dir, name);
  };
  const serving = entry('serving.mjs', 'setInterval(() => {}, 60_000);');
  const crashing = entry('crashing.mjs', 'process.exit(3);');
  const misconfigured = entry('misconfigured.mjs', 'process.exit(78);');
  const policy = { firstDelayMs: 100, maxCrashes: 3, stableAfterMs: 30_000 };
  let apps: AppProcesses | undefined;

  function supervise() {
    const said: string[] = [];
    const gaveUp: string[] = [];
    const restarted: ChildProcess[] = [];
    apps = new AppProcesses({ policy, log: (message) => said.push(message), onGiveUp: (message) => gaveUp.push(message), onRestarted: (_name, child) => restarted.push(child) });
    return { apps, said, gaveUp, restarted };
  }

  afterEach(async function () {
    await apps?.stop();
    apps = undefined;
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('starts an app killed with SIGKILL again, says so, and keeps the platform up', async function () {
    const { apps, said, gaveUp, restarted } = supervise();
    const first = apps.start('apps/serving', serving, process.env);
    await eventually(async () => (first.pid !== undefined && isProcessAlive(first.pid)) || undefined, 10_000, 'the app runs');
    process.kill(first.pid!, 'SIGKILL');
    const again = await eventually(async () => restarted[0], 20_000, 'the app restarted');
    expect(again.pid).to.not.equal(first.pid);
    await eventually(async () => isProcessAlive(again.pid!) || undefined, 10_000, 'the restarted app runs');
    expect(said[0]).to.match(/^apps\/serving exited unexpectedly \(SIGKILL\) after \d+\.\d s; restarting it in 0\.1 s \(crash 1 in a row; the platform stops at 3\)$/);
    expect(said[1]).to.equal(`apps/serving restarted (process ${again.pid})`);
    expect(gaveUp).to.deep.equal([]);
  });

  it('stops the platform when an app keeps crashing, after restarts that wait longer each time', async function () {
    const { apps, said, gaveUp } = supervise();
    apps.start('apps/crashing', crashing, process.env);
    const message = await eventually(async () => gaveUp[0], 30_000, 'the supervisor gave up');
    expect(message).to.equal('apps/crashing exited unexpectedly (code 3), 3 times in a row (each within 30 s of its start): it keeps crashing');
    expect(said.filter((line) => line.includes('restarting it in')).map((line) => /restarting it in (\S+ s)/.exec(line)![1])).to.deep.equal(['0.1 s', '0.2 s']);
    expect(said.filter((line) => line.includes('restarted (process'))).to.have.length(2);
  });

  it('stops the platform at once when an app refuses its configuration (status 78): a restart would fail the same way', async function () {
    const { apps, said, gaveUp } = supervise();
    apps.start('apps/misconfigured', misconfigured, process.env);
    const message = await eventually(async () => gaveUp[0], 20_000, 'the supervisor gave up');
    expect(message).to.equal('apps/misconfigured exited (code 78): its configuration is refused, a restart would fail the same way');
    expect(said).to.deep.equal([]);
  });
});
