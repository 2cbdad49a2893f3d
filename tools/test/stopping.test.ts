import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { leftovers, platformEnv, platformPorts, runningRecord, startPlatform, type StartedPlatform } from './platform-runner.js';

const STOP_WITHIN_MS = 10_000;

// Each ordinary way to stop `npm start` must leave nothing behind: no app, no PostgreSQL, no port
// taken. npm starts `sh -c`, which `exec`s node, which runs the apps and PostgreSQL in process
// groups of their own; what each signal reaches is different, and each case is tried for real.
describe('stopping npm start', function () {
  this.timeout(120_000);
  let dir: string | undefined;
  let started: StartedPlatform | undefined;

  afterEach(function () {
    // npm's process group holds npm and the start script; the apps and PostgreSQL follow the script.
    try {
      if (started) process.kill(-started.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    started = undefined;
    dir = undefined;
  });

  const ways: { name: string; stop: (npm: number, startScript: number) => void }[] = [
    // A terminal sends SIGINT to its whole foreground process group: npm and the start script.
    { name: 'Ctrl-C (SIGINT to the foreground process group)', stop: (npm) => process.kill(-npm, 'SIGINT') },
    { name: "SIGTERM to npm's own process", stop: (npm) => process.kill(npm, 'SIGTERM') },
    { name: "SIGTERM to the start script's process", stop: (_npm, startScript) => process.kill(startScript, 'SIGTERM') },
  ];

  for (const way of ways) {
    it(`${way.name} stops the apps (the gateway too) and PostgreSQL within 10 s and frees every port`, async function () {
      const prepared = await platformEnv();
      dir = prepared.dir;
      started = await startPlatform(prepared.env, 'npm');
      const record = runningRecord(prepared.dir);
      expect(await leftovers(record, prepared.env)).to.deep.equal({
        processes: [
          `start ${record.pid}`,
          `postgres ${record.processes.postgres}`,
          `api ${record.processes.api}`,
          `oauth ${record.processes.oauth}`,
          `gateway ${record.processes.gateway}`,
        ],
        ports: platformPorts(prepared.env),
      });

      way.stop(started.child.pid!, record.pid);
      const deadline = Date.now() + STOP_WITHIN_MS;
      let left = await leftovers(record, prepared.env);
      while ((left.processes.length > 0 || left.ports.length > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        left = await leftovers(record, prepared.env);
      }
      expect(left, started.output()).to.deep.equal({ processes: [], ports: [] });
      await started.exited;
    });
  }
});
