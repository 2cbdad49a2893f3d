import { expect } from 'chai';
import { AsyncLocalStorage } from 'node:async_hooks';
import { PeriodicWork } from './periodic-work.js';

/** A pass that records itself and waits until the test releases it. */
function heldPasses() {
  const held = { passes: 0, concurrent: 0, most: 0, releases: [] as (() => void)[] };
  const pass = async () => {
    held.passes += 1;
    held.concurrent += 1;
    held.most = Math.max(held.most, held.concurrent);
    await new Promise<void>((resolve) => held.releases.push(resolve));
    held.concurrent -= 1;
  };
  const release = async () => {
    held.releases.shift()!();
    // Lets the loop's own continuations run.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { held, pass, release };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const ignore = () => {};

async function until(check: () => boolean): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited > 10_000) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PeriodicWork', () => {
  it('runs a pass at start, one more after a pass nudged while it ran, never two at once', async () => {
    const { held, pass, release } = heldPasses();
    const work = new PeriodicWork(pass, { intervalMs: 60_000, onError: ignore });
    work.nudge();
    expect(held.passes, 'not started: a nudge does nothing').to.equal(0);
    work.start();
    expect(held.passes).to.equal(1);
    work.nudge();
    work.nudge();
    work.nudge();
    expect(held.passes, 'nudged during a pass: nothing yet').to.equal(1);
    await release();
    expect(held.passes, 'three nudges during a pass: one more pass').to.equal(2);
    await release();
    expect(held.passes, 'nobody nudged during the second: none').to.equal(2);
    await work.stop();
    expect(held.most).to.equal(1);
  });

  it('stop waits for the pass under way and runs none after, not even one nudged meanwhile', async () => {
    const { held, pass, release } = heldPasses();
    const work = new PeriodicWork(pass, { intervalMs: 10, onError: ignore });
    work.start();
    work.nudge();
    let stopped = false;
    const stopping = work.stop().then(() => (stopped = true));
    await settle();
    expect(stopped, 'a pass is under way').to.equal(false);
    await release();
    await stopping;
    work.nudge();
    await work.runNow();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([held.passes, work.isRunning]).to.deep.equal([1, false]);
  });

  it('runs again an interval after each pass when nobody nudges, and not after stop', async () => {
    let passes = 0;
    const work = new PeriodicWork(async () => void passes++, { intervalMs: 20, onError: ignore });
    work.start();
    await until(() => passes >= 3);
    await work.stop();
    const stoppedAt = passes;
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(passes, 'none after stop').to.equal(stoppedAt);
  });

  it('waits one interval for the first pass when told to', async () => {
    let passes = 0;
    const work = new PeriodicWork(() => void passes++, { intervalMs: 40, firstPass: 'after-interval', onError: ignore });
    work.start();
    await settle();
    expect(passes, 'none at start').to.equal(0);
    await until(() => passes >= 1);
    await work.stop();
  });

  it('reports a failing pass, thrown or rejected, and goes on', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const work = new PeriodicWork(
      () => {
        passes += 1;
        if (passes === 1) throw new Error('thrown');
        if (passes === 2) return Promise.reject(new Error('rejected'));
      },
      {
        intervalMs: 10,
        onError: (error) => {
          errors.push((error as Error).message);
          throw new Error('the reporter fails too');
        },
      },
    );
    work.start();
    await until(() => passes >= 3);
    await work.stop();
    expect(errors).to.deep.equal(['thrown', 'rejected']);
  });

  it('runNow runs a pass before start, and one after the pass under way, resolving when it has run', async () => {
    const { held, pass, release } = heldPasses();
    const work = new PeriodicWork(pass, { intervalMs: 10, onError: ignore });
    let first = false;
    const firstRun = work.runNow().then(() => (first = true));
    expect(held.passes).to.equal(1);
    let second = false;
    const secondRun = work.runNow().then(() => (second = true));
    const alsoSecond = work.runNow();
    await release();
    await firstRun;
    expect([held.passes, second], 'the second waits for the first').to.deep.equal([2, false]);
    await release();
    await Promise.all([secondRun, alsoSecond]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([first, second, held.passes, held.most], 'not started: no pass on a timer').to.deep.equal([true, true, 2, 1]);
  });

  it('runs every pass in the context it was made in, not in that of whoever started, nudged or ran it', async () => {
    const caller = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    const work = new PeriodicWork(() => void seen.push(caller.getStore()), { intervalMs: 60_000, onError: ignore });
    caller.run('the starter', () => work.start());
    await settle();
    caller.run('a request', () => work.nudge());
    await settle();
    await caller.run('a request', () => work.runNow());
    await work.stop();
    expect(seen).to.deep.equal([undefined, undefined, undefined]);

    // A pass on the timer set up after a nudged one: the request's context is long gone by then.
    const timed = new PeriodicWork(() => void seen.push(caller.getStore()), { intervalMs: 10, firstPass: 'after-interval', onError: ignore });
    timed.start();
    caller.run('a request', () => timed.nudge());
    await until(() => seen.length >= 6);
    await timed.stop();
    expect(seen.filter((store) => store !== undefined)).to.deep.equal([]);
  });

  it('stays stopped: a start after stop runs no pass', async () => {
    let passes = 0;
    const work = new PeriodicWork(() => void passes++, { intervalMs: 10, onError: ignore });
    work.start();
    await work.stop();
    work.start();
    work.nudge();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([passes, work.isRunning]).to.deep.equal([1, false]);
  });
});
