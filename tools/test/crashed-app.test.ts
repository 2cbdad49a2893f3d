import { expect } from 'chai';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isProcessAlive } from '@platform/postgres-launcher';
import { eventually, httpClient } from '@platform/testing';
import { leftovers, platformEnv, runningRecord, startPlatform, type StartedPlatform } from './platform-runner.js';

// A crash of one app is not the platform's end: `npm start` starts it again (AppProcesses).
describe('npm start: an app that crashes', function () {
  this.timeout(180_000);
  let dir: string | undefined;
  let started: StartedPlatform | undefined;

  after(function () {
    if (started && started.child.exitCode === null) started.child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('apps/api killed with SIGKILL comes back and serves again without a new start; the platform still stops cleanly', async function () {
    const prepared = await platformEnv();
    dir = prepared.dir;
    started = await startPlatform(prepared.env);
    const api = httpClient(`http://127.0.0.1:${prepared.env.API_PORT}`);
    expect((await api('GET', '/workspaces/default', { token: started.token })).status).to.equal(200);
    const killed = runningRecord(prepared.dir).processes.api;

    const crashedAt = Date.now();
    process.kill(killed, 'SIGKILL');
    const served = await eventually(
      async () => {
        const answer = await api('GET', '/workspaces/default', { token: started!.token }).catch(() => null);
        return answer?.status === 200 ? answer : undefined;
      },
      60_000,
      'the API serving again',
    );
    console.log(`      apps/api served again ${((Date.now() - crashedAt) / 1000).toFixed(1)} s after its SIGKILL`);
    expect(served.body.slug).to.equal('default');
    expect(started.output()).to.match(/apps\/api exited unexpectedly \(SIGKILL\) after \d+(\.\d)? s; restarting it in 1\.0 s \(crash 1 in a row; the platform stops at 5\)/);
    const record = runningRecord(prepared.dir);
    expect(record.processes.api, 'the record names the new process').to.not.equal(killed);
    expect(started.output()).to.include(`apps/api restarted (process ${record.processes.api})`);
    expect(isProcessAlive(record.processes.api)).to.equal(true);
    expect(started.child.exitCode, 'the start script still runs').to.equal(null);

    process.kill(record.pid, 'SIGTERM');
    await started.exited;
    expect(await leftovers(record, prepared.env)).to.deep.equal({ processes: [], ports: [] });
  });

  it('a start script killed with SIGKILL while a compute instance starts leaves nothing behind: no app, no initdb, no PostgreSQL', async function () {
    const prepared = await platformEnv();
    rmSync(dir!, { recursive: true, force: true });
    dir = prepared.dir;
    started = await startPlatform(prepared.env);
    const api = httpClient(`http://127.0.0.1:${prepared.env.API_PORT}`);
    const D = '/workspaces/default/databases/doomed';
    expect((await api('POST', '/workspaces/default/databases', { token: started.token, json: { databaseName: 'doomed', region: 'AWS_US_WEST_2' } })).status).to.equal(201);
    await eventually(async () => ((await api('GET', D, { token: started!.token })).body.status === 'READY' ? true : undefined), 60_000, 'READY');
    expect((await api('POST', `${D}/compute`, { token: started.token, json: { instanceName: 'doomed', instanceSize: 'small' } })).status).to.equal(201);
    // Under npm start, instances live beside the embedded server's folder.
    const computeDir = join(prepared.dir, 'compute');
    await eventually(async () => (processesNaming(computeDir).length > 0 ? true : undefined), 60_000, 'the instance’s initdb or server');
    const record = runningRecord(prepared.dir);

    process.kill(record.pid, 'SIGKILL');
    const deadline = Date.now() + 20_000;
    while ((processesNaming(computeDir).length > 0 || (await leftovers(record, prepared.env)).processes.length > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(processesNaming(computeDir), 'processes of the compute instance').to.deep.equal([]);
    expect(await leftovers(record, prepared.env)).to.deep.equal({ processes: [], ports: [] });
  });
});

/** Live processes whose command line names `folder` (initdb and postgres take their data folder as an argument). */
function processesNaming(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (command.includes(folder) && isProcessAlive(Number(entry))) found.push(`${entry} ${command.slice(0, 120)}`);
    } catch {
      // ended meanwhile
    }
  }
  return found;
}
