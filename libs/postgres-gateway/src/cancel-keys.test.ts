import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { INSTANCE_CANCEL_SLOTS, REGIONS, regionId } from '@platform/domain';
import { CancelBudget, MAX_CANCEL_SLOT, SessionKeys, isShortKey, longClientKey, readLongClientKey } from './cancel-keys.js';

const CLUSTER = { host: 'west.internal', port: 5432, index: 1 };
const INSTANCE = { host: '10.0.0.7', port: 6001, index: 17 };

describe('cancel keys', () => {
  it('wraps a 3.2 server key with a format byte and the slot, and reads them back', () => {
    const serverKey = Buffer.alloc(32, 0xab);
    for (const slot of [0, 1, 17, INSTANCE_CANCEL_SLOTS.last, MAX_CANCEL_SLOT]) {
      const key = longClientKey(slot, serverKey);
      expect(key.length).to.equal(35);
      expect([...key.subarray(0, 3)]).to.deep.equal([1, slot >>> 8, slot & 0xff]);
      expect(readLongClientKey(key)).to.deep.equal({ slot, backendKey: serverKey });
      expect(isShortKey(key)).to.equal(false);
    }
    // A server that only speaks 3.0 gives 4 bytes: the wrapped key is 7, never a 3.0 key's length.
    expect(readLongClientKey(longClientKey(2, Buffer.from([1, 2, 3, 4])))).to.deep.equal({ slot: 2, backendKey: Buffer.from([1, 2, 3, 4]) });
  });

  it('reads no slot from keys it did not make, and refuses slots that do not fit', () => {
    expect(readLongClientKey(Buffer.from([1, 0, 1]))).to.equal(null);
    expect(readLongClientKey(Buffer.from([2, 0, 1, 9, 9, 9, 9]))).to.equal(null);
    expect(isShortKey(Buffer.alloc(4))).to.equal(true);
    expect(() => longClientKey(MAX_CANCEL_SLOT + 1, Buffer.alloc(32))).to.throw(/out of range/);
    expect(() => longClientKey(-1, Buffer.alloc(32))).to.throw(/out of range/);
  });

  it('has room for every cancel slot the domain hands out, and regions’ clusters stay below the instances’', () => {
    expect(INSTANCE_CANCEL_SLOTS.last).to.be.at.most(MAX_CANCEL_SLOT);
    for (const region of REGIONS) expect(regionId(region)).to.be.below(INSTANCE_CANCEL_SLOTS.first);
  });

  it('keeps sessions’ keys while their clients are open, telling equal process ids apart by key', () => {
    const keys = new SessionKeys();
    const [first, second] = [new PassThrough(), new PassThrough()];
    const onCluster = { backend: CLUSTER, backendKey: Buffer.from('aaaa') };
    const onInstance = { backend: INSTANCE, backendKey: Buffer.alloc(32, 5) };
    keys.hold(4242, Buffer.from('aaaa'), onCluster, first);
    keys.hold(4242, longClientKey(17, onInstance.backendKey), onInstance, second);
    expect([
      keys.find(4242, Buffer.from('aaaa')),
      keys.find(4242, longClientKey(17, onInstance.backendKey)),
      keys.find(4242, Buffer.from('cccc')),
      keys.find(4242, onInstance.backendKey),
      keys.find(1, Buffer.from('aaaa')),
    ]).to.deep.equal([onCluster, onInstance, undefined, undefined, undefined]);
    first.destroy();
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        expect([keys.find(4242, Buffer.from('aaaa')), keys.size]).to.deep.equal([undefined, 1]);
        resolve();
      }),
    );
  });

  it('passes on so many cancel requests per second, then none until the next second', () => {
    const budget = new CancelBudget(3, 3);
    expect([1, 2, 3, 4].map(() => budget.take('10.0.0.1', 10_000))).to.deep.equal([true, true, true, false]);
    expect(budget.take('10.0.0.2', 10_999)).to.equal(false);
    expect(budget.take('10.0.0.1', 11_000)).to.equal(true);
  });

  it('gives each client address a share of its own: one sending junk leaves the others theirs', () => {
    const budget = new CancelBudget(100);
    expect(budget.perAddressPerSecond).to.equal(10);
    const junk = Array.from({ length: 50 }, () => budget.take('203.0.113.9', 20_000));
    expect(junk.filter(Boolean)).to.have.length(10);
    expect(Array.from({ length: 10 }, () => budget.take('198.51.100.7', 20_100))).to.deep.equal(Array(10).fill(true));
    expect(budget.take('198.51.100.7', 20_200)).to.equal(false);
    expect(budget.take('203.0.113.9', 21_000)).to.equal(true);
  });
});
