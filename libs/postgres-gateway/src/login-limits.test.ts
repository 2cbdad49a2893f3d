import { expect } from 'chai';
import { AuthSchedule, LoginSlots, addressKey } from './login-limits.js';

describe('login limits', () => {
  it('refuses a slot past the cap per key, and gives slots back once', () => {
    const slots = new LoginSlots(2);
    const first = slots.take('a');
    const second = slots.take('a');
    expect([first, second].every(Boolean)).to.equal(true);
    expect(slots.take('a')).to.equal(null);
    expect(slots.take('b')).to.not.equal(null);
    first!();
    first!();
    expect(slots.take('a')).to.not.equal(null);
    expect(slots.take('a')).to.equal(null);
  });

  it('forgets keys that hold nothing', () => {
    const slots = new LoginSlots(5);
    const releases = ['x', 'y', 'z'].map((key) => slots.take(key)!);
    expect(slots.keys).to.equal(3);
    for (const release of releases) release();
    expect(slots.keys).to.equal(0);
  });

  it('counts IPv4 by address (mapped or not) and IPv6 by /64', () => {
    expect(addressKey('127.0.0.2')).to.equal('127.0.0.2');
    expect(addressKey('::ffff:10.1.2.3')).to.equal('10.1.2.3');
    expect(addressKey('2001:db8:0:1::5')).to.equal(addressKey('2001:0db8:0000:0001:ffff:1:2:3'));
    expect(addressKey('2001:db8:0:1::5')).to.equal('2001:db8:0:1::/64');
    expect(addressKey('2001:db8:0:2::5')).to.not.equal(addressKey('2001:db8:0:1::5'));
    expect(addressKey('::1')).to.equal('0:0:0:0::/64');
    expect(addressKey(undefined)).to.equal('unknown');
  });

  it('draws a step’s wait from the real ones seen, a fallback before any', () => {
    const schedule = new AuthSchedule({ serverFirst: 7, verdict: 2 }, 3);
    expect(schedule.delayMs('serverFirst')).to.equal(7);
    for (const ms of [10, 20, 30, 40]) schedule.record('serverFirst', ms);
    const drawn = new Set(Array.from({ length: 200 }, () => schedule.delayMs('serverFirst')));
    // The oldest (10) was replaced by the newest.
    expect([...drawn].sort()).to.deep.equal([20, 30, 40]);
    expect(schedule.delayMs('verdict')).to.equal(2);
  });
});
