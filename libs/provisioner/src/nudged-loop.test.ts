import { expect } from 'chai';
import { NudgedLoop } from './nudged-loop.js';

describe('NudgedLoop', () => {
  it('runs a pass when started, once more after a pass nudged while it ran, never two at once, and none after stop', async () => {
    let passes = 0;
    let concurrent = 0;
    let most = 0;
    let release: () => void = () => {};
    const loop = new NudgedLoop(async () => {
      passes += 1;
      concurrent += 1;
      most = Math.max(most, concurrent);
      await new Promise<void>((resolve) => (release = resolve));
      concurrent -= 1;
    }, 60_000);
    loop.nudge();
    expect(passes, 'not started: a nudge does nothing').to.equal(0);
    loop.start();
    expect(passes).to.equal(1);
    loop.nudge();
    loop.nudge();
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(passes, 'two nudges during a pass: one more pass').to.equal(2);
    const stopped = loop.stop();
    release();
    await stopped;
    loop.nudge();
    expect([passes, most]).to.deep.equal([2, 1]);
  });

  it('runs again after the interval when nobody nudges', async () => {
    let passes = 0;
    const loop = new NudgedLoop(async () => void passes++, 20);
    loop.start();
    for (let waited = 0; passes < 3 && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    await loop.stop();
    const stoppedAt = passes;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(stoppedAt).to.be.at.least(3);
    expect(passes, 'none after stop').to.equal(stoppedAt);
  });
});
