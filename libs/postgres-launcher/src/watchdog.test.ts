import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from './embedded-postgres.js';
import { freePort, isPortFree, scratchDir } from './scratch.js';

describe('the embedded server dies with the process that started it', function () {
  this.timeout(60_000);

  it('a starter killed with SIGKILL leaves no server: it is gone within 10 s and its port is free', async function () {
    const dir = scratchDir('embedded-pg-watchdog-');
    const port = await freePort();
    const launcher = fileURLToPath(new URL('./embedded-postgres.ts', import.meta.url));
    const script = `
      import { startEmbeddedPostgres } from ${JSON.stringify(launcher)};
      const server = await startEmbeddedPostgres({ dir: ${JSON.stringify(dir)}, port: ${port} });
      console.log('pid ' + server.pid);
      setInterval(() => {}, 60_000);`;
    const starter = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let output = '';
      starter.stdout.on('data', (chunk) => (output += chunk));
      const pid = await new Promise<number>((resolve, reject) => {
        starter.once('exit', () => reject(new Error(`the starter exited: ${output}`)));
        starter.stdout.on('data', () => {
          const found = /pid (\d+)/.exec(output);
          if (found) resolve(Number(found[1]));
        });
      });
      expect(isProcessAlive(pid)).to.equal(true);
      expect(await isPortFree(port)).to.equal(false);

      starter.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(isProcessAlive(pid), `postgres ${pid} outlived its starter`).to.equal(false);
      expect(await isPortFree(port)).to.equal(true);
    } finally {
      starter.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
