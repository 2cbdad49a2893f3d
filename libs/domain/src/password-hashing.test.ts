import { expect } from 'chai';
import { admitHash, countHashJobs, emptyHashQueue, moveHashing, nextHashSteps, type HashingPolicy, type HashJob, type HashQueueState } from './password-hashing.js';

const POLICY: HashingPolicy = { slots: 2, perAccount: 4, maxWaitMs: 5_000 };
const NOW = 1_000_000;
/** 100 ms a hash, 2 at once, 5 s: 100 jobs fit. */
const COST = 100;

let ids = 0;
function job(keys: Partial<Pick<HashJob, 'account' | 'address' | 'database'>>, state: HashJob['state'] = 'admitted', endBy = NOW + 5_000): HashJob {
  return { id: ++ids, account: null, address: null, database: null, ...keys, endBy, state };
}

function queueOf(jobs: HashJob[]): HashQueueState {
  return jobs.reduce((queue, next) => moveHashing(queue, { kind: 'admit', job: next }), emptyHashQueue(COST));
}

const keys = (account: string | null, address: string | null, database: string | null) => ({ account, address, database });

describe('the password-hashing queue (admission and fair order)', () => {
  describe('admitHash', () => {
    it('lets one account hold 4 places from one address, then refuses it with the seconds its places take; the account from another address, and another account, are admitted', () => {
      const queue = queueOf(Array.from({ length: 4 }, () => job({ account: 'ada', address: '192.0.2.1', database: 'w/d' })));
      expect(admitHash(queue, POLICY, keys('ada', '192.0.2.1', 'w/d'), NOW + 5_000, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 1 });
      expect(admitHash(queue, POLICY, keys('ada', '198.51.100.1', 'w/d'), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
      expect(admitHash(queue, POLICY, keys('bob', '192.0.2.1', 'w/d'), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
    });

    it('full, refuses an account holding its share from many addresses, and admits another account', () => {
      const queue = queueOf(Array.from({ length: 100 }, (_, i) => job({ account: 'ada', address: `192.0.2.${i}` })));
      expect(admitHash(queue, POLICY, keys('ada', '198.51.100.1', null), NOW + 5_000, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 5 });
      expect(admitHash(queue, POLICY, keys('bob', '198.51.100.1', null), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
    });

    it('when the places taken fill its budget (the request’s deadline, at most maxWaitMs), refuses an address holding them all', () => {
      const queue = queueOf(Array.from({ length: 19 }, (_, i) => job({ account: `a${i}`, address: '192.0.2.1' })));
      // 1 s of budget: 20 hashes fit (2 at a time, 100 ms each); this is the 20th.
      expect(admitHash(queue, POLICY, keys('new', '192.0.2.1', null), NOW + 1_000, NOW)).to.deep.equal({ admitted: true });
      expect(admitHash(queue, POLICY, keys('new', '192.0.2.1', null), NOW + 999, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 1 });
      // A deadline past maxWaitMs is held to it: 100 fit.
      const full = queueOf(Array.from({ length: 100 }, (_, i) => job({ account: `a${i}`, address: '192.0.2.1' })));
      expect(admitHash(full, POLICY, keys('new', '192.0.2.1', null), NOW + 60_000, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 5 });
      // A deadline too near for one hash: nothing fits.
      expect(admitHash(emptyHashQueue(COST), POLICY, keys('new', '192.0.2.1', null), NOW + 49, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 1 });
    });

    it('full, still admits an address under its fair share (what fits divided among the addresses holding places)', () => {
      const queue = queueOf(Array.from({ length: 100 }, (_, i) => job({ account: `a${i}`, address: '192.0.2.1' })));
      expect(admitHash(queue, POLICY, keys('x', '198.51.100.1', null), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
      // With two addresses holding places, each one’s share is 50.
      const shared = queueOf([...queue.jobs.slice(0, 60), ...Array.from({ length: 40 }, (_, i) => job({ account: `b${i}`, address: '198.51.100.1' }))]);
      expect(admitHash(shared, POLICY, keys('x', '198.51.100.1', null), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
      expect(admitHash(shared, POLICY, keys('x', '192.0.2.1', null), NOW + 5_000, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 3 });
    });

    it('full, refuses a database holding its share and admits another database, whatever their addresses', () => {
      const queue = queueOf(Array.from({ length: 100 }, (_, i) => job({ account: `a${i}`, address: `192.0.2.${i}`, database: 'w/busy' })));
      expect(admitHash(queue, POLICY, keys('x', '198.51.100.1', 'w/busy'), NOW + 5_000, NOW)).to.deep.equal({ admitted: false, retryAfterSeconds: 5 });
      expect(admitHash(queue, POLICY, keys('x', '198.51.100.1', 'w/quiet'), NOW + 5_000, NOW)).to.deep.equal({ admitted: true });
    });
  });

  describe('nextHashSteps', () => {
    it('starts no more than the slots, in the fair order: a database with nothing running before older jobs of a busy one', () => {
      const running = job({ account: 'r', address: '192.0.2.1', database: 'w/busy' }, 'running');
      const olderBusy = job({ account: 'b', address: '192.0.2.2', database: 'w/busy' }, 'waiting');
      const olderBusyToo = job({ account: 'c', address: '192.0.2.3', database: 'w/busy' }, 'waiting');
      const quiet = job({ account: 'q', address: '192.0.2.4', database: 'w/quiet' }, 'waiting');
      const queue: HashQueueState = { jobs: [running, olderBusy, olderBusyToo, quiet], costMs: COST };
      expect(nextHashSteps(queue, POLICY, NOW)).to.deep.equal({ start: [quiet], shed: [] });
      expect(nextHashSteps({ ...queue, jobs: [olderBusy, olderBusyToo, quiet] }, POLICY, NOW)).to.deep.equal({ start: [olderBusy, quiet], shed: [] });
    });

    it('sheds a waiting job that could no longer end in time, and leaves admitted ones (still reading) alone', () => {
      const late = job({ account: 'l' }, 'waiting', NOW + COST - 1);
      const inTime = job({ account: 'i' }, 'waiting', NOW + COST);
      const reading = job({ account: 'r' }, 'admitted', NOW);
      expect(nextHashSteps({ jobs: [late, inTime, reading], costMs: COST }, POLICY, NOW)).to.deep.equal({ start: [inTime], shed: [late] });
    });
  });

  describe('moveHashing', () => {
    it('moves a job from admitted to waiting to running; its end leaves the list and updates the cost; counts follow the list', () => {
      const first = job({ account: 'a' });
      let queue = moveHashing(emptyHashQueue(COST), { kind: 'admit', job: first });
      queue = moveHashing(queue, { kind: 'ask', id: first.id });
      expect([countHashJobs(queue), countHashJobs(queue, 'waiting'), countHashJobs(queue, 'running')]).to.deep.equal([1, 1, 0]);
      queue = moveHashing(queue, { kind: 'start', id: first.id, now: NOW });
      expect(countHashJobs(queue, 'running')).to.equal(1);
      queue = moveHashing(queue, { kind: 'finish', id: first.id, now: NOW + 200 });
      expect(queue).to.deep.equal({ jobs: [], costMs: 0.8 * COST + 0.2 * 200 });
    });

    it('a job released before it ran leaves without changing the cost; a start of a job not waiting changes nothing', () => {
      const first = job({ account: 'a' });
      let queue = moveHashing(emptyHashQueue(COST), { kind: 'admit', job: first });
      expect(moveHashing(queue, { kind: 'start', id: first.id, now: NOW })).to.deep.equal(queue);
      queue = moveHashing(queue, { kind: 'leave', id: first.id });
      expect(queue).to.deep.equal({ jobs: [], costMs: COST });
    });
  });
});
