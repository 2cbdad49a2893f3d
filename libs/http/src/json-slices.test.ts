import { expect } from 'chai';
import { stringifyInSlices } from './json-slices.js';

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
