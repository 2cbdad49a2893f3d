/**
 * The lives of a supervisor's workers, one slot per worker it keeps: each slot is one state value,
 * `moveWorker` is the one place that moves it, and what the supervisor does (fork, hand over, stop)
 * follows from the states. A worker's death, whenever it comes, only moves its slot to `waiting`:
 * its replacement is forked when the wait is over, after a back-off that grows while the slot's
 * workers die early and is bounded.
 */

/** How long a worker must have served for its death to count as a one-off (replaced at once) rather than a crash loop. */
export const STEADY_MS = 10_000;
/** The wait before a slot's next worker, by the early deaths in a row of its workers (none: at once); the last is the bound. */
export const RESTART_DELAYS_MS = [0, 500, 1_000, 2_000, 5_000, 10_000];

export type WorkerLife<W> =
  /** Forked at `since`; it has not said yet that it serves. */
  | { state: 'starting'; worker: W; since: number; earlyDeaths: number }
  /** It serves (the supervisor hands it connections) since `since`. */
  | { state: 'serving'; worker: W; since: number; earlyDeaths: number }
  /** It said it is stopping (its own signal): it gets no new connections, and is replaced once it exits. */
  | { state: 'stopping'; worker: W; servedSince: number | null; earlyDeaths: number }
  /** No worker: the next one is forked at `forkAt`. */
  | { state: 'waiting'; forkAt: number; earlyDeaths: number }
  /** The supervisor is stopping it: it is not replaced. */
  | { state: 'closing'; worker: W }
  /** The supervisor stopped: nothing more. */
  | { state: 'closed' };

export type WorkerEvent<W> =
  | { kind: 'forked'; worker: W }
  /** Forking failed (the system refused a process): the slot waits again, as after an early death. */
  | { kind: 'fork-failed' }
  /** The worker said it serves. */
  | { kind: 'started' }
  /** The worker said it is stopping. */
  | { kind: 'stopping' }
  | { kind: 'exited' }
  /** The supervisor stops. */
  | { kind: 'close' };

/** A slot's life after `event` at `now`; an event its state does not expect (a late message, say) leaves it as it is. */
export function moveWorker<W>(life: WorkerLife<W>, event: WorkerEvent<W>, now: number): WorkerLife<W> {
  switch (event.kind) {
    case 'forked':
      return life.state === 'waiting' ? { state: 'starting', worker: event.worker, since: now, earlyDeaths: life.earlyDeaths } : life;
    case 'fork-failed':
      return life.state === 'waiting' ? waitAfterDeath(life.earlyDeaths + 1, now) : life;
    case 'started':
      return life.state === 'starting' ? { state: 'serving', worker: life.worker, since: now, earlyDeaths: life.earlyDeaths } : life;
    case 'stopping':
      if (life.state === 'starting') return { state: 'stopping', worker: life.worker, servedSince: null, earlyDeaths: life.earlyDeaths };
      if (life.state === 'serving') return { state: 'stopping', worker: life.worker, servedSince: life.since, earlyDeaths: life.earlyDeaths };
      return life;
    case 'exited': {
      if (life.state === 'closing') return { state: 'closed' };
      if (life.state !== 'starting' && life.state !== 'serving' && life.state !== 'stopping') return life;
      const servedSince = life.state === 'serving' ? life.since : life.state === 'stopping' ? life.servedSince : null;
      return waitAfterDeath(servedSince !== null && now - servedSince >= STEADY_MS ? 0 : life.earlyDeaths + 1, now);
    }
    case 'close':
      return 'worker' in life ? { state: 'closing', worker: life.worker } : { state: 'closed' };
  }
}

function waitAfterDeath<W>(earlyDeaths: number, now: number): WorkerLife<W> {
  return { state: 'waiting', forkAt: now + RESTART_DELAYS_MS[Math.min(earlyDeaths, RESTART_DELAYS_MS.length - 1)], earlyDeaths };
}

/** The supervisor's slots, `count` of them, each waiting for its first worker at once. */
export class WorkerLives<W> {
  private readonly slots: WorkerLife<W>[];

  constructor(count: number) {
    this.slots = Array.from({ length: count }, () => ({ state: 'waiting', forkAt: 0, earlyDeaths: 0 }));
  }

  /** Slots waiting for a worker whose wait is over at `now`. */
  due(now: number): number[] {
    return this.slots.flatMap((life, slot) => (life.state === 'waiting' && life.forkAt <= now ? [slot] : []));
  }

  /** When the next waiting slot's wait is over; null when none waits. */
  nextForkAt(): number | null {
    const waits = this.slots.flatMap((life) => (life.state === 'waiting' ? [life.forkAt] : []));
    return waits.length === 0 ? null : Math.min(...waits);
  }

  /** Moves the slot's life; answers the new one. */
  moveSlot(slot: number, event: WorkerEvent<W>, now: number): WorkerLife<W> {
    this.slots[slot] = moveWorker(this.slots[slot], event, now);
    return this.slots[slot];
  }

  /** Moves the life of `worker`'s slot; answers the new one (null: no slot has that worker, nothing moved). */
  move(worker: W, event: WorkerEvent<W>, now: number): WorkerLife<W> | null {
    const slot = this.slotOf(worker);
    return slot < 0 ? null : this.moveSlot(slot, event, now);
  }

  /** The life of `worker`'s slot; null when no slot has it. */
  lifeOf(worker: W): WorkerLife<W> | null {
    return this.slots[this.slotOf(worker)] ?? null;
  }

  private slotOf(worker: W): number {
    return this.slots.findIndex((life) => 'worker' in life && life.worker === worker);
  }

  /** Every slot's life moved to `closing` or `closed`; answers the workers to stop. */
  close(now: number): W[] {
    for (let slot = 0; slot < this.slots.length; slot++) this.moveSlot(slot, { kind: 'close' }, now);
    return this.workers();
  }

  /** Workers in `states`; every worker alive when none are given. */
  workers(...states: WorkerLife<W>['state'][]): W[] {
    return this.slots.flatMap((life) => ('worker' in life && (states.length === 0 || states.includes(life.state)) ? [life.worker] : []));
  }

  /** Workers that serve, or served and are stopping: those whose counters go into /metrics. */
  served(): W[] {
    return this.slots.flatMap((life) => (life.state === 'serving' || (life.state === 'stopping' && life.servedSince !== null) ? [life.worker] : []));
  }

  lives(): readonly WorkerLife<W>[] {
    return this.slots;
  }
}
