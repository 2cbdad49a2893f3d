import { expect } from 'chai';
import type { FailureCount, SignInFailureStore, SignInPolicy } from '@platform/domain';
import { FakeClock } from '@platform/testing';
import { addressKey, SignInThrottle } from './sign-in-throttle.js';

/** The control plane's counters, in memory: each read and write yields, as a round trip does. */
class MemoryFailures implements SignInFailureStore {
  readonly counts = new Map<string, FailureCount>();

  async read(keys: string[], since: Date): Promise<Map<string, FailureCount>> {
    await new Promise((resolve) => setImmediate(resolve));
    return new Map(keys.flatMap((key) => (this.counts.get(key)?.lastFailure ?? since) > since ? [[key, this.counts.get(key)!] as const] : []));
  }

  async record(keys: string[], now: Date, since: Date): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    for (const key of keys) {
      const known = this.counts.get(key);
      this.counts.set(key, { failures: known && known.lastFailure > since ? known.failures + 1 : 1, lastFailure: now });
    }
  }

  async forget(key: string): Promise<void> {
    this.counts.delete(key);
  }
}

const POLICY: SignInPolicy = {
  pairFailuresBeforeDelay: 3,
  accountFailuresBeforeDelay: 10,
  addressFailuresBeforeDelay: 20,
  firstDelaySeconds: 2,
  maxDelaySeconds: 60,
  memorySeconds: 3600,
};

describe('addressKey', function () {
  const cases: [string, string][] = [
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:192.0.2.1', '192.0.2.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['/run/api.sock', '/run/api.sock'],
  ];
  for (const [address, key] of cases) {
    it(`counts ${address} as ${key}`, function () {
      expect(addressKey(address)).to.equal(key);
    });
  }
});

describe('SignInThrottle', function () {
  let clock: FakeClock;
  let failures: MemoryFailures;
  let throttle: SignInThrottle;

  beforeEach(function () {
    clock = new FakeClock(Date.UTC(2026, 10, 22));
    failures = new MemoryFailures();
    throttle = new SignInThrottle(failures, POLICY, clock);
  });

  const ada = { account: 'user:ada', address: '192.0.2.1' };
  const wrong = async () => false;
  const right = async () => true;

  it('counts a failure for the pair, the account and the address, and a success forgets only the pair', async function () {
    expect(await throttle.attempt(ada, wrong)).to.deep.equal({ ok: false });
    expect([...failures.counts.keys()]).to.deep.equal(['pair:192.0.2.1 user:ada', 'account:user:ada', 'address:192.0.2.1']);
    expect(await throttle.attempt(ada, right)).to.deep.equal({ ok: true });
    expect([...failures.counts.keys()]).to.deep.equal(['account:user:ada', 'address:192.0.2.1']);
  });

  it('answers the wait without running the check once the pair is past its limit', async function () {
    for (let i = 0; i < 3; i++) await throttle.attempt(ada, wrong);
    let checked = false;
    expect(
      await throttle.attempt(ada, async () => {
        checked = true;
        return true;
      }),
    ).to.deep.equal({ wait: 2 });
    expect(checked).to.equal(false);
    // Waiting counted nothing: when the wait is over, the right password gets through.
    expect(failures.counts.get('pair:192.0.2.1 user:ada')?.failures).to.equal(3);
    clock.advance(2000);
    expect(await throttle.attempt(ada, right)).to.deep.equal({ ok: true });
  });

  it('judges concurrent attempts of one account from one address in turn, so only the limit is checked', async function () {
    let checks = 0;
    const guess = async () => {
      checks++;
      return false;
    };
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => throttle.attempt(ada, guess)));
    expect(checks).to.equal(3);
    expect(outcomes.filter((outcome) => 'wait' in outcome)).to.have.length(9);
    expect(throttle.queued).to.equal(0);
  });

  it('runs attempts of different accounts or addresses side by side', async function () {
    let running = 0;
    let most = 0;
    const slowCheck = async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return true;
    };
    await Promise.all([
      throttle.attempt(ada, slowCheck),
      throttle.attempt({ ...ada, address: '192.0.2.2' }, slowCheck),
      throttle.attempt({ ...ada, account: 'user:bob' }, slowCheck),
    ]);
    expect(most).to.equal(3);
  });

  it('lets the next attempt in turn run when a check throws, and counts nothing for it', async function () {
    const broken = throttle.attempt(ada, async () => {
      throw new Error('control plane gone');
    });
    const next = throttle.attempt(ada, right);
    const error = await broken.then(
      () => null,
      (thrown: Error) => thrown,
    );
    expect(error?.message).to.equal('control plane gone');
    expect(await next).to.deep.equal({ ok: true });
    expect(failures.counts.size).to.equal(0);
  });

  it('counts an IPv6 client by its /64', async function () {
    for (let i = 0; i < 3; i++) await throttle.attempt({ account: 'user:ada', address: `2001:db8:1:2::${i + 1}` }, wrong);
    expect(await throttle.attempt({ account: 'user:ada', address: '2001:db8:1:2:ffff::9' }, right)).to.deep.equal({ wait: 2 });
    expect(await throttle.attempt({ account: 'user:ada', address: '2001:db8:1:3::1' }, right)).to.deep.equal({ ok: true });
  });

  it('spends an address’s sign-up budget per call and answers the wait once it is spent, apart from sign-in failures', async function () {
    for (let i = 0; i < 20; i++) expect(await throttle.spend('192.0.2.9')).to.equal(null);
    expect(await throttle.spend('192.0.2.9')).to.equal(2);
    expect(await throttle.spend('192.0.2.10')).to.equal(null);
    expect(await throttle.attempt({ account: 'user:someone', address: '192.0.2.9' }, right)).to.deep.equal({ ok: true });
    for (let i = 0; i < 20; i++) await throttle.attempt({ account: `user:${i}`, address: '192.0.2.11' }, wrong);
    expect(await throttle.spend('192.0.2.11')).to.equal(null);
  });
});
