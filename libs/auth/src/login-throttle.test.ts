import { expect } from 'chai';
import { FakeClock } from '@platform/testing';
import { MemoryLoginThrottle, type LoginThrottleOptions } from './login-throttle.js';

const WINDOW = 900;
const EMAIL = 'email:acme/app:ada@example.test';
const OTHER_EMAIL = 'email:acme/app:bob@example.test';
const CLIENT = 'client:192.0.2.1';
const OTHER_CLIENT = 'client:192.0.2.2';

describe('MemoryLoginThrottle', function () {
  let clock: FakeClock;

  beforeEach(function () {
    clock = new FakeClock(Date.UTC(2026, 0, 1));
  });

  function throttle(options: Partial<LoginThrottleOptions> = {}): MemoryLoginThrottle {
    return new MemoryLoginThrottle({ clock, limits: { email: 3, client: 10 }, windowSeconds: WINDOW, ...options });
  }

  function fail(target: MemoryLoginThrottle, keys: string[], times: number): void {
    for (let i = 0; i < times; i++) target.recordFailure(keys);
  }

  it('lets sign-ins through until an email reaches its limit, then asks to wait for the whole window', function () {
    const subject = throttle();
    expect(subject.retryAfter([EMAIL, CLIENT])).to.equal(null);
    fail(subject, [EMAIL, CLIENT], 2);
    expect(subject.retryAfter([EMAIL, CLIENT])).to.equal(null);
    subject.recordFailure([EMAIL, CLIENT]);
    expect(subject.retryAfter([EMAIL, CLIENT])).to.equal(WINDOW);
    // The email is what waits: the same email from another client waits too...
    expect(subject.retryAfter([EMAIL, OTHER_CLIENT])).to.equal(WINDOW);
    // ...and another email from the same client (3 of its 10 failures used) does not.
    expect(subject.retryAfter([OTHER_EMAIL, CLIENT])).to.equal(null);
  });

  it('counts a client’s failures across emails against the client limit', function () {
    const subject = throttle();
    for (let i = 0; i < 9; i++) subject.recordFailure([`email:acme/app:user${i}@example.test`, CLIENT]);
    expect(subject.retryAfter([OTHER_EMAIL, CLIENT])).to.equal(null);
    subject.recordFailure([`email:acme/app:user9@example.test`, CLIENT]);
    expect(subject.retryAfter([OTHER_EMAIL, CLIENT])).to.equal(WINDOW);
    expect(subject.retryAfter([CLIENT])).to.equal(WINDOW);
    // Another client with a fresh email is not affected; nor is that email from elsewhere.
    expect(subject.retryAfter([OTHER_EMAIL, OTHER_CLIENT])).to.equal(null);
  });

  it('uses the limit of the key’s kind: the email limit does not apply to client keys', function () {
    const subject = throttle({ limits: { email: 2, client: 4 } });
    fail(subject, [CLIENT], 3);
    expect(subject.retryAfter([CLIENT])).to.equal(null);
    fail(subject, [EMAIL], 2);
    expect(subject.retryAfter([EMAIL])).to.equal(WINDOW);
    subject.recordFailure([CLIENT]);
    expect(subject.retryAfter([CLIENT])).to.equal(WINDOW);
  });

  it('computes Retry-After in whole seconds, rounded up, from the end of the key’s window', function () {
    const subject = throttle();
    subject.recordFailure([EMAIL]); // the window starts at the first failure: ends at +900 s
    clock.advance(100_000);
    fail(subject, [EMAIL], 2);
    expect(subject.retryAfter([EMAIL])).to.equal(800);
    clock.advance(500);
    expect(subject.retryAfter([EMAIL])).to.equal(800);
    clock.advance(799_300);
    expect(subject.retryAfter([EMAIL])).to.equal(1);
  });

  it('answers the longest wait among the keys that are over their limit', function () {
    const subject = throttle({ limits: { email: 1, client: 1 } });
    subject.recordFailure([CLIENT]);
    clock.advance(300_000);
    subject.recordFailure([EMAIL]);
    expect(subject.retryAfter([CLIENT])).to.equal(600);
    expect(subject.retryAfter([EMAIL])).to.equal(900);
    expect(subject.retryAfter([CLIENT, EMAIL])).to.equal(900);
    expect(subject.retryAfter([EMAIL, CLIENT])).to.equal(900);
  });

  it('a success clears only the keys it is given', function () {
    const subject = throttle({ limits: { email: 3, client: 3 } });
    fail(subject, [EMAIL, CLIENT], 3);
    subject.recordSuccess([OTHER_EMAIL]);
    expect(subject.retryAfter([EMAIL])).to.equal(WINDOW);
    subject.recordSuccess([EMAIL]);
    expect(subject.retryAfter([EMAIL])).to.equal(null);
    expect(subject.retryAfter([CLIENT])).to.equal(WINDOW);
    // The email starts counting from zero again.
    fail(subject, [EMAIL], 2);
    expect(subject.retryAfter([EMAIL])).to.equal(null);
  });

  it('forgets failures once their window has ended, and starts a new window', function () {
    const subject = throttle();
    fail(subject, [EMAIL], 3);
    clock.advance(WINDOW * 1000 - 1);
    expect(subject.retryAfter([EMAIL])).to.equal(1);
    clock.advance(1);
    expect(subject.retryAfter([EMAIL])).to.equal(null);
    // A failure after the window counts as the first of a new one.
    fail(subject, [EMAIL], 2);
    expect(subject.retryAfter([EMAIL])).to.equal(null);
    subject.recordFailure([EMAIL]);
    expect(subject.retryAfter([EMAIL])).to.equal(WINDOW);
  });

  it('remembers at most maxKeys keys, forgetting the oldest first', function () {
    const subject = throttle({ limits: { email: 1, client: 1 }, maxKeys: 3 });
    const keys = ['email:a', 'email:b', 'email:c', 'email:d'];
    for (const key of keys.slice(0, 3)) {
      subject.recordFailure([key]);
      clock.advance(1000);
    }
    for (const key of keys.slice(0, 3)) expect(subject.retryAfter([key]), key).to.not.equal(null);
    // The oldest is the key whose window began first, even when it has failed again since.
    subject.recordFailure(['email:a']);
    subject.recordFailure(['email:d']);
    expect(subject.retryAfter(['email:a'])).to.equal(null);
    for (const key of ['email:b', 'email:c', 'email:d']) expect(subject.retryAfter([key]), key).to.not.equal(null);
    subject.recordFailure(['email:e']);
    expect(subject.retryAfter(['email:b'])).to.equal(null);
    for (const key of ['email:c', 'email:d', 'email:e']) expect(subject.retryAfter([key]), key).to.not.equal(null);
  });

  it('acquire counts an attempt when it starts, so concurrent attempts cannot all pass', function () {
    const subject = throttle();
    const answers = Array.from({ length: 5 }, () => subject.acquire([EMAIL, CLIENT]));
    expect(answers.slice(0, 3)).to.deep.equal([null, null, null]);
    expect(answers.slice(3)).to.deep.equal([WINDOW, WINDOW]);
  });

  it('a success forgets the email and gives the client its attempt back', function () {
    const subject = throttle({ limits: { email: 3, client: 3 } });
    expect(subject.acquire([EMAIL, CLIENT])).to.equal(null);
    expect(subject.acquire([EMAIL, CLIENT])).to.equal(null);
    subject.recordSuccess([EMAIL, CLIENT]);
    // The client has 1 of its 3 attempts used, the email none: two more pass, the third waits.
    expect(subject.acquire([OTHER_EMAIL, CLIENT])).to.equal(null);
    expect(subject.acquire([OTHER_EMAIL, CLIENT])).to.equal(null);
    expect(subject.acquire([OTHER_EMAIL, CLIENT])).to.equal(WINDOW);
    expect(subject.retryAfter([EMAIL, OTHER_CLIENT])).to.equal(null);
  });
});
