import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUN_SERVICE = fileURLToPath(new URL('./run-service.ts', import.meta.url));

interface Service {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Resolves once the service has started (or rejects with what it printed). */
  started: Promise<void>;
}

/**
 * Runs runService in a child process over a fake service, printing `started` once it runs; the
 * service prints `closing` when closed and then (unless `closeHangs`) finishes.
 */
function runFakeService(settings: { failConfig?: boolean; failStart?: boolean; closeHangs?: boolean; stopDeadlineMs?: number; ipc?: boolean }): Service {
  const script = `
    import { runService } from ${JSON.stringify(RUN_SERVICE)};
    class FakeConfigError extends Error {}
    await runService(
      'fake',
      () => { if (${Boolean(settings.failConfig)}) throw new FakeConfigError('FAKE_PORT must be a port'); return {}; },
      async () => {
        if (${Boolean(settings.failStart)}) throw new FakeConfigError('FAKE_KEYS cannot open the key in use');
        return { close: () => { console.log('closing'); return ${settings.closeHangs ? 'new Promise(() => {})' : 'Promise.resolve()'}; } };
      },
      (error) => error instanceof FakeConfigError,
      { stopDeadlineMs: ${settings.stopDeadlineMs ?? 5_000} },
    );
    // Printed once runService has returned: its handlers are in place from then on.
    console.log('started');
    setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe', ...(settings.ipc ? (['ipc'] as const) : [])],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => output.includes('started') && resolve());
    void exited.then(() => reject(new Error(`exited before starting: ${output}`)));
  });
  return { child, output: () => output, exited, started };
}

describe('runService', function () {
  this.timeout(20_000);
  const children: ChildProcess[] = [];

  afterEach(function () {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  function run(settings: Parameters<typeof runFakeService>[0]): Service {
    const service = runFakeService(settings);
    children.push(service.child);
    return service;
  }

  it('exits 78 with the configuration error, naming the service', async function () {
    const service = run({ failConfig: true });
    expect(await service.exited).to.equal(78);
    expect(service.output()).to.equal('fake: configuration error: FAKE_PORT must be a port\n');
  });

  it('exits 78 with a configuration error found while starting', async function () {
    const service = run({ failStart: true });
    expect(await service.exited).to.equal(78);
    expect(service.output()).to.equal('fake: configuration error: FAKE_KEYS cannot open the key in use\n');
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`closes the service and exits 0 on ${signal}`, async function () {
      const service = run({});
      await service.started;
      service.child.kill(signal);
      expect(await service.exited).to.equal(0);
      expect(service.output()).to.equal('started\nclosing\n');
    });
  }

  it('closes the service and exits 0 when the parent that started it over IPC is gone', async function () {
    const service = run({ ipc: true });
    await service.started;
    service.child.disconnect();
    expect(await service.exited).to.equal(0);
    expect(service.output()).to.equal('started\nclosing\n');
  });

  it('exits 1 when closing takes longer than the deadline', async function () {
    const service = run({ closeHangs: true, stopDeadlineMs: 300 });
    await service.started;
    const asked = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).to.equal(1);
    expect(Date.now() - asked).to.be.below(3_000);
    expect(service.output()).to.equal('started\nclosing\nfake: did not stop within 300 ms; exiting now\n');
  });

  it('exits 1 at once on a second request to stop', async function () {
    const service = run({ closeHangs: true });
    await service.started;
    service.child.kill('SIGTERM');
    while (!service.output().includes('closing')) await new Promise((resolve) => setTimeout(resolve, 20));
    service.child.kill('SIGINT');
    expect(await service.exited).to.equal(1);
    expect(service.output()).to.equal('started\nclosing\nfake: SIGINT while stopping; exiting now\n');
  });
});
