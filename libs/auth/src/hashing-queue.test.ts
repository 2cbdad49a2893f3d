import { expect } from 'chai';
import { withDeadline } from '@platform/deadline';
import { countHashJobs, RateLimitedError, type PasswordHasher } from '@platform/domain';
import { FairHashingQueue } from './hashing-queue.js';
import { ScryptPasswordHasher } from './password-hasher.js';

/** A hash function whose hashes end when the test says: what runs is visible, nothing depends on time. */
class HeldHasher implements PasswordHasher {
  readonly running: { password: string; end: () => void }[] = [];

  private held(password: string): Promise<void> {
    return new Promise((end) => this.running.push({ password, end }));
  }

  async hash(password: string): Promise<string> {
    await this.held(password);
    return `hash:${password}`;
  }

  async verify(password: string, hash: string): Promise<boolean> {
    await this.held(password);
    return hash === `hash:${password}`;
  }

  async verifyNothing(password: string): Promise<false> {
    await this.held(password);
    return false;
  }

  /** Ends the oldest running hash. */
  endOne(): void {
    this.running.shift()!.end();
  }
}

/** Lets the queue's promises settle (no timer: microtasks and one macrotask). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FairHashingQueue (the password-hashing queue over a hash function)', function () {
  it('runs at most its slots at once; the next waiting hash starts when one ends, and places are given back', async function () {
    const hasher = new HeldHasher();
    const queue = new FairHashingQueue(hasher, { slots: 2, perAccount: 4, maxWaitMs: 60_000 }, 10);
    const hashes = ['a', 'b', 'c'].map(async (password, i) => (await queue.admit({ account: password, address: `192.0.2.${i}` })).hash(password));
    await settle();
    expect(hasher.running.map((run) => run.password)).to.deep.equal(['a', 'b']);
    expect([countHashJobs(queue.snapshot, 'running'), countHashJobs(queue.snapshot, 'waiting')]).to.deep.equal([2, 1]);
    hasher.endOne();
    await settle();
    expect(hasher.running.map((run) => run.password)).to.deep.equal(['b', 'c']);
    hasher.endOne();
    hasher.endOne();
    expect(await Promise.all(hashes)).to.deep.equal(['hash:a', 'hash:b', 'hash:c']);
    expect(queue.snapshot.jobs).to.deep.equal([]);
  });

  it('refuses a fifth place of one account from one address with 429 and a Retry-After, after its pause; a released place is given back', async function () {
    const queue = new FairHashingQueue(new HeldHasher(), { slots: 2, perAccount: 4, maxWaitMs: 60_000 }, 10, 20);
    const places = await Promise.all(Array.from({ length: 4 }, () => queue.admit({ account: 'ada', address: '192.0.2.1' })));
    const asked = performance.now();
    const refused = await queue.admit({ account: 'ada', address: '192.0.2.1' }).catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(RateLimitedError);
    expect(refused).to.include({ code: 'too_many_attempts', retryAfterSeconds: 1 });
    // Not a timing assertion: a refusal answered at once would make a flood cost CPU, not time.
    expect(performance.now() - asked, 'answered after its pause').to.be.at.least(15);
    places[0].release();
    places[0].release();
    expect(countHashJobs(queue.snapshot)).to.equal(3);
    expect(await queue.admit({ account: 'ada', address: '192.0.2.1' })).to.have.property('release');
    // The same account from another address has places of its own.
    expect(await queue.admit({ account: 'ada', address: '198.51.100.7' })).to.have.property('release');
  });

  it('a hash that could not end before its request’s deadline leaves the queue with 429, not a late 503', async function () {
    const hasher = new HeldHasher();
    const queue = new FairHashingQueue(hasher, { slots: 1, perAccount: 4, maxWaitMs: 60_000 }, 10);
    const first = (await queue.admit({ account: 'a', address: '192.0.2.1' })).hash('a');
    // Admitted with a 200 ms deadline, it waits behind a hash that does not end, and is refused once 10 ms (its cost) from the deadline.
    const late = await withDeadline(200, async () => (await queue.admit({ account: 'b', address: '192.0.2.2' })).hash('b')).catch((error: unknown) => error);
    expect(late).to.be.instanceOf(RateLimitedError);
    expect(late).to.include({ code: 'too_many_attempts' });
    expect(queue.snapshot.jobs.map((job) => [job.account, job.state])).to.deep.equal([['a', 'running']]);
    hasher.endOne();
    expect(await first).to.equal('hash:a');
  });

  it('hashes and verifies with scrypt through its places', async function () {
    const queue = new FairHashingQueue(new ScryptPasswordHasher(10));
    const hash = await (await queue.admit({ address: '192.0.2.1' })).hash('correct horse');
    expect(await (await queue.admit({ account: 'ada', address: '192.0.2.1' })).verify('correct horse', hash)).to.equal(true);
    expect(await (await queue.admit({ account: 'ada', address: '192.0.2.1' })).verifyNothing('correct horse')).to.equal(false);
    expect(queue.snapshot.jobs).to.deep.equal([]);
  });
});
