import { availableParallelism } from 'node:os';
import { remainingMs } from '@platform/deadline';
import {
  addressKey,
  admitHash,
  emptyHashQueue,
  moveHashing,
  nextHashSteps,
  RateLimitedError,
  type AdmittedHash,
  type HashClaim,
  type HashingEvent,
  type HashingPolicy,
  type HashQueueState,
  type PasswordHasher,
  type PasswordHashing,
} from '@platform/domain';

/** The queue's settings (README PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_MAX_WAIT_MS). */
export const HASHING_DEFAULTS = {
  // At least one of the libuv pool's 4 threads left to file reads, DNS and token signatures.
  slots: Math.max(1, Math.min(availableParallelism(), 3)),
  perAccount: 4,
  maxWaitMs: 8_000,
} satisfies HashingPolicy;

const REFUSAL = 'Too many password checks are under way for this account, address or database; try again shortly';
/** See admit. */
const REFUSAL_PAUSE_MS = 1_000;

interface Waker {
  start(): void;
  refuse(error: RateLimitedError): void;
  /** Wakes the queue when the job could no longer end in time, should nothing else happen first. */
  timer?: NodeJS.Timeout;
}

/**
 * The hashing queue of password-hashing.ts over a hash function (scrypt): the one way the
 * platform hashes or checks a password. A place is taken at admission and given back when its
 * hash is done or released; a hash waits for a slot (the request's deadline bounds it: a hash
 * that could not end in time is refused, 429, never left to fail later as a 503). This class only
 * carries out the domain's decisions: its state is one value, moved by one method.
 */
export class FairHashingQueue implements PasswordHashing {
  private state: HashQueueState;
  private nextId = 1;
  private readonly wakers = new Map<number, Waker>();
  private readonly policy: HashingPolicy;

  constructor(
    private readonly hasher: PasswordHasher,
    policy: Partial<HashingPolicy> = {},
    /** What one hash is first thought to cost (ms), until hashes are measured. */
    costMs = 150,
    /** How long a refusal waits before it is answered (bounded by half the request's time left). */
    private readonly refusalPauseMs = REFUSAL_PAUSE_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.policy = { ...HASHING_DEFAULTS, ...Object.fromEntries(Object.entries(policy).filter(([, value]) => value !== undefined)) };
    this.state = emptyHashQueue(costMs);
  }

  /** The queue as it is (for tests and metrics): counts derive from its jobs. */
  get snapshot(): HashQueueState {
    return this.state;
  }

  async admit(claim: HashClaim): Promise<AdmittedHash> {
    const now = this.now();
    const left = remainingMs();
    const endBy = now + Math.min(this.policy.maxWaitMs, left === undefined ? Infinity : left);
    const keys = { account: claim.account ?? null, address: claim.address === undefined ? null : addressKey(claim.address), database: claim.database ?? null };
    const admission = admitHash(this.state, this.policy, keys, endBy, now);
    if (!admission.admitted) {
      // Answered after a pause (at most half the request's time left): a client sending its next
      // attempt the moment it is refused would otherwise spend the process's CPU on refusals (a
      // flood of 64 did 1,000 a second, and other routes waited behind them).
      await new Promise((resume) => setTimeout(resume, Math.min(this.refusalPauseMs, Math.max(0, (endBy - now) / 2))));
      throw new RateLimitedError(admission.retryAfterSeconds, REFUSAL);
    }
    const id = this.nextId++;
    this.move({ kind: 'admit', job: { id, ...keys, endBy, state: 'admitted' } });
    let used = false;
    const run = async <T>(work: () => Promise<T>): Promise<T> => {
      if (used) throw new Error('a place in the hashing queue is for one hash');
      used = true;
      await this.slot(id);
      try {
        return await work();
      } finally {
        this.move({ kind: 'finish', id, now: this.now() });
        this.step();
      }
    };
    return {
      hash: (password) => run(() => this.hasher.hash(password)),
      verify: (password, hash) => run(() => this.hasher.verify(password, hash)),
      verifyNothing: (password) => run(() => this.hasher.verifyNothing(password)),
      release: () => {
        if (used) return;
        used = true;
        this.move({ kind: 'leave', id });
        this.step();
      },
    };
  }

  /** Waits until job `id` runs: it asks for a slot, and the domain's steps say when it starts or leaves. */
  private slot(id: number): Promise<void> {
    return new Promise<void>((start, reject) => {
      const waker: Waker = { start, refuse: reject };
      this.wakers.set(id, waker);
      this.move({ kind: 'ask', id });
      this.step();
      const job = this.state.jobs.find((candidate) => candidate.id === id);
      if (job?.state === 'waiting') waker.timer = setTimeout(() => this.step(), Math.max(0, job.endBy - this.now() - this.state.costMs + 1));
    });
  }

  /** The one place the queue's state changes. */
  private move(event: HashingEvent): void {
    this.state = moveHashing(this.state, event);
  }

  /** Carries out nextHashSteps: starts what may start, refuses what can no longer end in time. */
  private step(): void {
    const { start, shed } = nextHashSteps(this.state, this.policy, this.now());
    for (const job of shed) {
      const waker = this.wake(job.id);
      this.move({ kind: 'leave', id: job.id });
      const drainSeconds = Math.ceil((this.state.jobs.length * this.state.costMs) / this.policy.slots / 1000);
      waker?.refuse(new RateLimitedError(Math.max(1, drainSeconds), REFUSAL));
    }
    for (const job of start) {
      const waker = this.wake(job.id);
      this.move({ kind: 'start', id: job.id, now: this.now() });
      waker?.start();
    }
  }

  private wake(id: number): Waker | undefined {
    const waker = this.wakers.get(id);
    this.wakers.delete(id);
    if (waker?.timer) clearTimeout(waker.timer);
    return waker;
  }
}
