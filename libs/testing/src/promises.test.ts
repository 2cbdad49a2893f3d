import { expect } from 'chai';
import { FakeClock } from './fake-clock.js';
import { deferred, eventually, rejection } from './promises.js';

describe('test helpers for time and promises', function () {
  it('FakeClock starts where told and moves only by advance()', function () {
    const clock = new FakeClock(Date.UTC(2030, 0, 1));
    expect(clock.now().toISOString()).to.equal('2030-01-01T00:00:00.000Z');
    clock.advance(1_500);
    expect(clock.now().toISOString()).to.equal('2030-01-01T00:00:01.500Z');
    expect(new FakeClock(new Date(Date.UTC(2030, 0, 2))).now().toISOString()).to.equal('2030-01-02T00:00:00.000Z');
  });

  it('FakeClock starts at the current time by default, and then stands still', async function () {
    const before = Date.now();
    const clock = new FakeClock();
    const start = clock.now().getTime();
    expect(start).to.be.within(before, Date.now());
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(clock.now().getTime()).to.equal(start);
  });

  it('deferred() resolves its promise only when told, with the value given', async function () {
    const held = deferred<string>();
    let settled: string | null = null;
    void held.promise.then((value) => (settled = value));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).to.equal(null);
    held.resolve('released');
    expect(await held.promise).to.equal('released');
    expect(settled).to.equal('released');
  });

  it('eventually() returns the first value the check gives, polling until then', async function () {
    let calls = 0;
    const value = await eventually(async () => (++calls === 3 ? 'third' : undefined), 5_000, 'the third call');
    expect(value).to.equal('third');
    expect(calls).to.equal(3);
  });

  it('eventually() fails after its timeout, naming what it waited for', async function () {
    const started = Date.now();
    const error = await rejection(eventually(async () => undefined, 100, 'nothing'));
    expect(error.message).to.equal('timed out waiting for nothing');
    expect(Date.now() - started).to.be.at.least(100);
  });

  it('rejection() returns the error, and fails when the promise resolves', async function () {
    const failure = Object.assign(new Error('refused'), { code: '42501' });
    expect(await rejection(Promise.reject(failure))).to.equal(failure);
    let caught: unknown;
    try {
      await rejection(Promise.resolve('fine'));
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).to.equal('expected the promise to reject, but it resolved');
  });
});
