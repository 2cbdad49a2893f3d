import { expect } from 'chai';
import { LongPageTurns, stringifyInSlices } from './json-slices.js';

describe('stringifyInSlices', function () {
  it('writes what JSON.stringify writes, whatever the length against the slice', async function () {
    const item = (i: number) => ({ id: i, name: i % 3 ? `tenant ${i} “quoted” \u2028` : null, nested: { at: new Date(i * 1000), list: [i, undefined] }, skipped: undefined });
    for (const length of [0, 1, 2, 3, 4, 5, 7, 250]) {
      const items = Array.from({ length }, (_, i) => item(i));
      expect(await stringifyInSlices(items, 2), `length ${length}`).to.equal(JSON.stringify(items));
    }
    expect(await stringifyInSlices([undefined, () => 1, 'x'], 1)).to.equal(JSON.stringify([undefined, () => 1, 'x']));
  });

  it('gives the event loop a turn between slices, and none for a single slice', async function () {
    const order: string[] = [];
    setImmediate(() => order.push('other work'));
    await stringifyInSlices([1, 2, 3], 2).then(() => order.push('two slices'));
    expect(order).to.deep.equal(['other work', 'two slices']);

    order.length = 0;
    setImmediate(() => order.push('other work'));
    await stringifyInSlices([1, 2], 2).then(() => order.push('one slice'));
    expect(order).to.deep.equal(['one slice']);
  });
});

describe('LongPageTurns', function () {
  it('runs one piece of work at a time, first come first served, and a failure passes the turn on', async function () {
    const turns = new LongPageTurns();
    const events: string[] = [];
    let running = 0;
    const gates = new Map<string, () => void>();
    const work = (name: string, fail = false) =>
      turns.take(async () => {
        running += 1;
        events.push(`${name} starts (${running} running)`);
        await new Promise<void>((resolve) => gates.set(name, resolve));
        running -= 1;
        events.push(`${name} ends`);
        if (fail) throw new Error(`${name} failed`);
        return name;
      });
    const a = work('a');
    const b = work('b', true);
    const c = work('c');
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).to.deep.equal(['a starts (1 running)']);
    gates.get('a')!();
    expect(await a).to.equal('a');
    await new Promise((resolve) => setImmediate(resolve));
    gates.get('b')!();
    const failed = await b.then(() => null, (error: Error) => error.message);
    expect(failed).to.equal('b failed');
    await new Promise((resolve) => setImmediate(resolve));
    gates.get('c')!();
    expect(await c).to.equal('c');
    expect(events).to.deep.equal(['a starts (1 running)', 'a ends', 'b starts (1 running)', 'b ends', 'c starts (1 running)', 'c ends']);
    // With nobody waiting, the next one starts at once.
    const d = turns.take(async () => 'd');
    expect(await d).to.equal('d');
  });

  /** Two turns of ~20 ms one after the other; what happened between them, and how long the gap was. */
  async function twoTurns(othersInFlight: number) {
    const turns = new LongPageTurns(() => othersInFlight);
    const events: string[] = [];
    const times: Record<string, number> = {};
    const work = (name: string) =>
      turns.take(async () => {
        times[`${name} starts`] = performance.now();
        events.push(`${name} starts`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        times[`${name} ends`] = performance.now();
        events.push(`${name} ends`);
        // Whatever else the process has to do gets its chance here.
        setImmediate(() => events.push('other work'));
      });
    await Promise.all([work('a'), work('b')]);
    const firstTurn = times['a ends'] - times['a starts'];
    return { events, gap: times['b starts'] - times['a ends'], firstTurn };
  }

  it('with other requests in flight, starts the next turn only after twice the last turn has passed', async function () {
    const { events, gap, firstTurn } = await twoTurns(1);
    expect(events.slice(0, 4)).to.deep.equal(['a starts', 'a ends', 'other work', 'b starts']);
    // Timers never fire early (to a millisecond or two of the loop’s clock): the pause is at least twice the turn.
    expect(gap).to.be.at.least(2 * firstTurn - 2);
  });

  it('with no other request in flight, hands the turn on at once', async function () {
    const { events } = await twoTurns(0);
    expect(events.slice(0, 4)).to.deep.equal(['a starts', 'a ends', 'b starts', 'other work']);
  });
});
