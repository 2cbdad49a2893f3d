import { expect } from 'chai';
import type { FailureCount, MailPolicy, SignInFailureStore } from '@platform/domain';
import { FakeClock } from '@platform/testing';
import { MailSendThrottle } from './mail-throttle.js';

/** The control plane's counters, in memory; each call yields, as a round trip does. */
class MemoryCounts implements SignInFailureStore {
  readonly counts = new Map<string, FailureCount>();

  async read(keys: string[], since: Date): Promise<Map<string, FailureCount>> {
    await new Promise((resolve) => setImmediate(resolve));
    return new Map(keys.flatMap((key) => ((this.counts.get(key)?.lastFailure ?? since) > since ? [[key, this.counts.get(key)!] as const] : [])));
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

const POLICY: MailPolicy = { accountMailsBeforeDelay: 2, addressMailsBeforeDelay: 5, firstDelaySeconds: 60, maxDelaySeconds: 600, memorySeconds: 3600 };

describe('MailSendThrottle', function () {
  it('counts a burst one by one: the account budget holds, and waits are not counted', async function () {
    const store = new MemoryCounts();
    const throttle = new MailSendThrottle(store, POLICY, new FakeClock(new Date('2026-01-01T00:00:00Z')));
    const waits = await Promise.all(Array.from({ length: 4 }, () => throttle.spend({ account: 'reset:db:ada@example.test', address: '192.0.2.1' })));
    expect(waits).to.deep.equal([null, null, 60, 60]);
    expect(store.counts.get('mail-account:reset:db:ada@example.test')?.failures).to.equal(2);
    expect(store.counts.get('mail-address:192.0.2.1')?.failures).to.equal(2);
  });

  it('keeps the budgets of another prefix apart (sign-up’s from mail’s)', async function () {
    const store = new MemoryCounts();
    const clock = new FakeClock(new Date('2026-01-01T00:00:00Z'));
    const mail = new MailSendThrottle(store, POLICY, clock);
    const signUp = new MailSendThrottle(store, { ...POLICY, addressMailsBeforeDelay: 1 }, clock, 'sign-up');
    for (let i = 0; i < 5; i++) expect(await mail.spend({ account: `reset:db:${i}@example.test`, address: '192.0.2.9' })).to.equal(null);
    expect(await mail.spend({ account: 'reset:db:late@example.test', address: '192.0.2.9' })).to.equal(60);
    expect(await signUp.spend({ account: 'sign_up:db:new@example.test', address: '192.0.2.9' })).to.equal(null);
    expect(await signUp.spend({ account: 'sign_up:db:other@example.test', address: '192.0.2.9' })).to.equal(60);
    expect(store.counts.get('sign-up-address:192.0.2.9')?.failures).to.equal(1);
  });

  it('holds back an address asking for many accounts, IPv6 by its /64', async function () {
    const clock = new FakeClock(new Date('2026-01-01T00:00:00Z'));
    const throttle = new MailSendThrottle(new MemoryCounts(), POLICY, clock);
    for (let n = 0; n < 5; n++) expect(await throttle.spend({ account: `a${n}`, address: `2001:db8::${n + 1}` })).to.equal(null);
    expect(await throttle.spend({ account: 'a9', address: '2001:db8::99' })).to.equal(60);
    clock.advance(61_000);
    expect(await throttle.spend({ account: 'a9', address: '2001:db8::99' })).to.equal(null);
  });
});
