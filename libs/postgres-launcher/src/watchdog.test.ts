import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
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

  it('a watched process group ends with its starter, every process in it', async function () {
    const watchdog = fileURLToPath(new URL('./watchdog.ts', import.meta.url));
    // Two silent processes in a group of their own, as initdb and its bootstrap server are: nothing breaks their pipes.
    const script = `
      import { spawn } from 'node:child_process';
      import { watchOver } from ${JSON.stringify(watchdog)};
      const group = spawn('/bin/sh', ['-c', 'sleep 60 & sleep 60 & wait'], { detached: true, stdio: 'ignore' });
      watchOver(group.pid, { group: true });
      setTimeout(() => console.log('group ' + group.pid), 300);
      setInterval(() => {}, 60_000);`;
    const starter = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let group = 0;
    try {
      group = await new Promise<number>((resolve, reject) => {
        let output = '';
        starter.once('exit', () => reject(new Error(`the starter exited: ${output}`)));
        starter.stdout.on('data', (chunk) => {
          output += chunk;
          const found = /group (\d+)/.exec(output);
          if (found) resolve(Number(found[1]));
        });
      });
      expect(groupMembers(group)).to.have.length(3);
      starter.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (groupMembers(group).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(groupMembers(group), 'members of the group outlived their starter').to.deep.equal([]);
    } finally {
      starter.kill('SIGKILL');
      for (const pid of group ? groupMembers(group) : []) process.kill(pid, 'SIGKILL');
    }
  });

  it('a starter killed with SIGKILL during initdb leaves no initdb, nor the servers it bootstraps with', async function () {
    const dir = scratchDir('embedded-pg-bootstrap-watchdog-');
    const port = await freePort();
    const launcher = fileURLToPath(new URL('./embedded-postgres.ts', import.meta.url));
    const script = `
      import { startEmbeddedPostgres } from ${JSON.stringify(launcher)};
      await startEmbeddedPostgres({ dir: ${JSON.stringify(dir)}, port: ${port} });
      setInterval(() => {}, 60_000);`;
    const starter = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
    try {
      let initdb: number | undefined;
      for (const deadline = Date.now() + 30_000; initdb === undefined && Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
        initdb = processesNaming(dir).find((process) => process.pid !== starter.pid && process.command.includes('initdb'))?.pid;
      }
      expect(initdb, 'initdb ran').to.be.a('number');

      starter.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (processesNaming(dir).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(processesNaming(dir), 'processes of the cluster outlived their starter').to.deep.equal([]);
      expect(isProcessAlive(initdb!)).to.equal(false);
      // Whether initdb was stopped halfway or had just finished is a race (a quiet machine finishes
      // a bootstrap in the moment the kill takes): what must hold is that nothing of it runs on.
    } finally {
      starter.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Live processes whose command line names `dir` (initdb and the servers it runs take the data folder as an argument). */
function processesNaming(dir: string): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (command.includes(dir) && isProcessAlive(Number(entry))) found.push({ pid: Number(entry), command });
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** Live processes of process group `group`. */
function groupMembers(group: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the command name: state, parent, process group.
      const [, , pgrp] = fields.slice(fields.lastIndexOf(') ') + 2).split(' ');
      if (Number(pgrp) === group && isProcessAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}
