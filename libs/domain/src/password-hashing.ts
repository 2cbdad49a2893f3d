/**
 * The password-hashing queue's admission policy (README "Sign-in throttling", issue 46). Every
 * password hash or verification takes a place in one queue per process before anything else of
 * its request is done; the machine hashes `slots` at once (scrypt takes about 150 ms of a core).
 * A place is refused (429 `too_many_attempts` with Retry-After, never a 503) when:
 *   - its account already holds `perAccount` places from its client address (one person signs in
 *     once at a time; the same account from another address has places of its own);
 *   - the places already taken fill what can end within its budget (the request's deadline, at
 *     most `maxWaitMs`, `slots` hashes at a time), and its database, its client address or its
 *     account holds its fair share of them (what fits divided among the databases, addresses or
 *     accounts holding places). One under its shares still gets in: it is served first, and the
 *     places of those past their shares wait longer or leave.
 * Waiting hashes start in a fair order (fewest running of their database, then address, then
 * account; then first come), and one that can no longer end within its budget leaves with a 429.
 *
 * State as values: a queue is its list of jobs (every count derives from it); `moveHashing` is the
 * one place that moves it; `admitHash` and `nextHashSteps` are decisions a thin runner carries out.
 */

/** Who a hash is for: the keys of its fair shares. */
export interface HashClaim {
  /** The account, or the name as typed (folded), the hash is for; absent when none (a developer setting a user's password). */
  account?: string;
  /** The client's address (an IPv6 client counts by its /64); absent when a use case is called without one (its tests). */
  address?: string;
  /** The database whose user it is; absent for the platform's own accounts (developers). */
  database?: string;
}

export interface HashingPolicy {
  /** Hashes running at once: the machine's hashing capacity. */
  slots: number;
  /** Places one account holds at once from one client address, waiting or running. */
  perAccount: number;
  /** The longest a hash may take from its admission to its end; a request's deadline may make it shorter. */
  maxWaitMs: number;
}

/** Admitted (its request is reading what it needs), waiting for a slot, or hashing. */
export type HashJobState = 'admitted' | 'waiting' | 'running';

export interface HashJob {
  readonly id: number;
  readonly account: string | null;
  readonly address: string | null;
  readonly database: string | null;
  /** When it must have ended (milliseconds, the clock of `now`). */
  readonly endBy: number;
  readonly state: HashJobState;
  /** When it started running (for its cost), once it has. */
  readonly startedAt?: number;
}

export interface HashQueueState {
  /** Every job holding a place, in order of admission. */
  readonly jobs: readonly HashJob[];
  /** What one hash takes, as measured while running beside others (ms). */
  readonly costMs: number;
}

export type HashingEvent =
  | { kind: 'admit'; job: HashJob }
  | { kind: 'ask'; id: number }
  | { kind: 'start'; id: number; now: number }
  | { kind: 'finish'; id: number; now: number }
  | { kind: 'leave'; id: number };

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

/** An empty queue whose hashes are first thought to cost `costMs`. */
export function emptyHashQueue(costMs: number): HashQueueState {
  return { jobs: [], costMs: Math.max(1, costMs) };
}

/** How many jobs of the queue have `state` (all of them without one). */
export function countHashJobs(queue: HashQueueState, state?: HashJobState): number {
  return state === undefined ? queue.jobs.length : queue.jobs.filter((job) => job.state === state).length;
}

/** The one place a queue changes: each event answers the next queue. */
export function moveHashing(queue: HashQueueState, event: HashingEvent): HashQueueState {
  switch (event.kind) {
    case 'admit':
      return { ...queue, jobs: [...queue.jobs, { ...event.job, state: 'admitted' }] };
    case 'ask':
      return withJob(queue, event.id, (job) => (job.state === 'admitted' ? { ...job, state: 'waiting' } : job));
    case 'start':
      return withJob(queue, event.id, (job) => (job.state === 'waiting' ? { ...job, state: 'running', startedAt: event.now } : job));
    case 'finish': {
      const job = queue.jobs.find((candidate) => candidate.id === event.id);
      if (!job) return queue;
      // A moving average of what hashes take here and now (several running share the cores).
      const took = job.startedAt === undefined ? queue.costMs : Math.max(1, event.now - job.startedAt);
      return { jobs: queue.jobs.filter((other) => other !== job), costMs: 0.8 * queue.costMs + 0.2 * took };
    }
    case 'leave':
      return { ...queue, jobs: queue.jobs.filter((job) => job.id !== event.id) };
  }
}

function withJob(queue: HashQueueState, id: number, change: (job: HashJob) => HashJob): HashQueueState {
  return { ...queue, jobs: queue.jobs.map((job) => (job.id === id ? change(job) : job)) };
}

type Keys = Pick<HashJob, 'account' | 'address' | 'database'>;

/** Whether a new job with `keys`, to end by `endBy`, takes a place now (policy above). */
export function admitHash(queue: HashQueueState, policy: HashingPolicy, keys: Keys, endBy: number, now: number): Admission {
  const { jobs, costMs } = queue;
  const budget = Math.min(endBy - now, policy.maxWaitMs);
  // The jobs that can end within the budget, `slots` at a time, this one included.
  const fits = Math.floor((policy.slots * budget) / costMs);
  const drainSeconds = (held: number) => Math.max(1, Math.ceil((held * costMs) / policy.slots / 1000));
  const held = (key: keyof Keys) => jobs.filter((job) => keys[key] !== null && job[key] === keys[key]).length;
  // One account from one address: its attempts take turns anyway (the sign-in throttle), so more
  // places would only wait. The same account from another address has places of its own.
  const pair = jobs.filter((job) => keys.account !== null && job.account === keys.account && job.address === keys.address).length;
  if (pair >= policy.perAccount) return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((pair * costMs) / 1000)) };
  if (fits < 1) return { admitted: false, retryAfterSeconds: drainSeconds(Math.max(jobs.length, 1)) };
  if (jobs.length < fits) return { admitted: true };
  // Full: only a database, an address and an account under their fair shares (what fits, divided
  // among those holding places) still get in, and are served first (nextHashSteps); the places of
  // those past their shares then wait longer, and any that can no longer end in time leave with a 429.
  for (const key of ['database', 'address', 'account'] as const) {
    if (keys[key] === null) continue;
    const holders = new Set(jobs.map((job) => job[key]).filter((value) => value !== null)).add(keys[key]);
    const mine = held(key);
    if (mine >= Math.max(1, Math.floor(fits / holders.size))) return { admitted: false, retryAfterSeconds: drainSeconds(mine) };
  }
  return { admitted: true };
}

/**
 * What the runner does next: the waiting jobs that can no longer end in time leave (`shed`), and
 * free slots go to waiting jobs in the fair order (fewest running of their database, then address,
 * then account; then first admitted).
 */
export function nextHashSteps(queue: HashQueueState, policy: HashingPolicy, now: number): { start: HashJob[]; shed: HashJob[] } {
  const shed = queue.jobs.filter((job) => job.state === 'waiting' && now + queue.costMs > job.endBy);
  const running = queue.jobs.filter((job) => job.state === 'running');
  const waiting = queue.jobs.filter((job) => job.state === 'waiting' && !shed.includes(job));
  const start: HashJob[] = [];
  while (running.length + start.length < policy.slots && waiting.length > 0) {
    const busy = [...running, ...start];
    const runningOf = (job: HashJob, key: keyof Keys) => (job[key] === null ? 0 : busy.filter((other) => other[key] === job[key]).length);
    let best = 0;
    for (let i = 1; i < waiting.length; i++) {
      const order = (['database', 'address', 'account'] as const).map((key) => runningOf(waiting[i], key) - runningOf(waiting[best], key)).find((d) => d !== 0) ?? 0;
      if (order < 0) best = i;
    }
    start.push(...waiting.splice(best, 1));
  }
  return { start, shed };
}

/** The hash function itself (scrypt): what a place in the queue runs. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
  /** Costs what `verify` costs and fails: used when there is no user, so timing tells nothing. */
  verifyNothing(password: string): Promise<false>;
}

/** A place in the hashing queue, for one hash: running one gives the place back, and so does `release`. */
export interface AdmittedHash extends PasswordHasher {
  /** Gives the place back unused (again, or after a hash, does nothing). */
  release(): void;
}

/** Every password hash and check of the platform goes through this port (the queue above). */
export interface PasswordHashing {
  /**
   * A place for one hash for `claim`, taken before its request reads anything: RateLimitedError
   * (429 `too_many_attempts`, with the seconds to wait) when the policy refuses it, which an
   * adapter may answer after a pause (a flood then costs its sender time, not us CPU). The hash
   * itself also answers RateLimitedError when it could not start in time.
   */
  admit(claim: HashClaim): Promise<AdmittedHash>;
}

/** One hash for `claim`, through the queue: a place, then the hash. */
export async function hashPassword(hashing: PasswordHashing, claim: HashClaim, password: string): Promise<string> {
  return (await hashing.admit(claim)).hash(password);
}
