import { expect } from 'chai';
import { delaySeconds, signInWait, type AttemptCounts, type SignInPolicy } from './sign-in-throttling.js';

const POLICY: SignInPolicy = {
  pairFailuresBeforeDelay: 5,
  accountFailuresBeforeDelay: 20,
  addressFailuresBeforeDelay: 100,
  firstDelaySeconds: 1,
  maxDelaySeconds: 900,
  memorySeconds: 86_400,
};
const NOW = new Date('2026-11-22T12:00:00Z');

/** A counter whose last failure was `secondsAgo` before NOW. */
const count = (failures: number, secondsAgo = 0) => ({ failures, lastFailure: new Date(NOW.getTime() - secondsAgo * 1000) });

describe('sign-in throttling policy', () => {
  it('doubles the wait from the first delay per failure past a limit, up to the ceiling', () => {
    expect([0, 1, 2, 3, 9, 10, 11, 5000].map((excess) => delaySeconds(POLICY, excess))).to.deep.equal([1, 2, 4, 8, 512, 900, 900, 900]);
  });

  const cases: { what: string; counts: AttemptCounts; wait: number | null }[] = [
    { what: 'nothing known', counts: {}, wait: null },
    { what: 'four failures from the pair', counts: { pair: count(4), account: count(4), address: count(4) }, wait: null },
    { what: 'the fifth failure from the pair, just now', counts: { pair: count(5), account: count(5), address: count(5) }, wait: 1 },
    { what: 'the fifth failure from the pair, a second ago', counts: { pair: count(5, 1), account: count(5, 1) }, wait: null },
    { what: 'the seventh failure from the pair, a second ago', counts: { pair: count(7, 1), account: count(7, 1) }, wait: 3 },
    { what: 'the 40th failure from the pair, ten minutes ago', counts: { pair: count(40, 600), account: count(40, 600) }, wait: 300 },
    {
      what: 'an address with no failures for an account that 500 addresses are guessing',
      counts: { account: count(10_000), address: count(3) },
      wait: null,
    },
    { what: 'one failure from the pair of an account failed 20 times', counts: { pair: count(1), account: count(20) }, wait: 1 },
    { what: 'one failure from the pair of an account failed 23 times', counts: { pair: count(1, 2), account: count(23) }, wait: 6 },
    { what: 'one failure from the pair of an account failed 19 times', counts: { pair: count(1), account: count(19) }, wait: null },
    { what: 'an address with 99 failures across accounts', counts: { address: count(99) }, wait: null },
    { what: 'an address with 100 failures across accounts', counts: { address: count(100) }, wait: 1 },
    { what: 'an address with 104 failures, the last 10 s ago', counts: { address: count(104, 10) }, wait: 6 },
    { what: 'the longer of the pair’s and the address’s waits', counts: { pair: count(6, 1), address: count(103, 1) }, wait: 7 },
  ];
  for (const { what, counts, wait } of cases) {
    it(`${what}: ${wait === null ? 'goes ahead' : `waits ${wait} s`}`, () => {
      expect(signInWait(POLICY, counts, NOW)).to.equal(wait);
    });
  }

  it('rounds a part of a second up, so Retry-After is never 0', () => {
    expect(signInWait(POLICY, { pair: { failures: 5, lastFailure: new Date(NOW.getTime() - 999) } }, NOW)).to.equal(1);
  });
});
