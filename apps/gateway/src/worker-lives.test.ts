import { expect } from 'chai';
import { RESTART_DELAYS_MS, STEADY_MS, WorkerLives, moveWorker, type WorkerLife } from './worker-lives.js';

/** Stand-in workers: a life only compares them. */
const [a, b, c] = ['a', 'b', 'c'];

describe('worker lives', function () {
  it('forks every slot at once, serves once a worker says so, and forks nothing while each slot has a worker', function () {
    const lives = new WorkerLives<string>(2);
    expect(lives.due(0)).to.deep.equal([0, 1]);
    lives.moveSlot(0, { kind: 'forked', worker: a }, 0);
    lives.moveSlot(1, { kind: 'forked', worker: b }, 0);
    expect([lives.due(0), lives.workers('starting'), lives.workers('serving')]).to.deep.equal([[], [a, b], []]);
    lives.move(b, { kind: 'started' }, 100);
    expect([lives.workers('serving'), lives.served(), lives.workers()]).to.deep.equal([[b], [b], [a, b]]);
  });

  it('replaces a worker that dies while starting, after a back-off that grows with its slot’s early deaths in a row and is bounded', function () {
    let life: WorkerLife<string> = { state: 'waiting', forkAt: 0, earlyDeaths: 0 };
    let now = 0;
    const waits: number[] = [];
    for (let death = 0; death < RESTART_DELAYS_MS.length + 2; death++) {
      life = moveWorker(life, { kind: 'forked', worker: a }, now);
      now += 50;
      life = moveWorker(life, { kind: 'exited' }, now);
      if (life.state !== 'waiting') throw new Error(`a dead worker's slot is ${life.state}`);
      waits.push(life.forkAt - now);
      now = life.forkAt;
    }
    expect(waits).to.deep.equal([500, 1_000, 2_000, 5_000, 10_000, 10_000, 10_000, 10_000]);
  });

  it('counts a death within STEADY_MS of serving as early, and replaces at once a worker that served longer (the count starts again)', function () {
    const waitAfter = (life: WorkerLife<string>, now: number) => {
      const next = moveWorker(life, { kind: 'exited' }, now);
      return next.state === 'waiting' ? [next.forkAt - now, next.earlyDeaths] : next.state;
    };
    const serving: WorkerLife<string> = { state: 'serving', worker: a, since: 1_000, earlyDeaths: 3 };
    expect(waitAfter(serving, 1_000 + STEADY_MS - 1)).to.deep.equal([RESTART_DELAYS_MS[4], 4]);
    expect(waitAfter(serving, 1_000 + STEADY_MS)).to.deep.equal([0, 0]);
    // A worker stopping on its own (SIGTERM from outside) is replaced too, by the same rule.
    const stopping = moveWorker(serving, { kind: 'stopping' }, 2_000);
    expect(stopping).to.deep.equal({ state: 'stopping', worker: a, servedSince: 1_000, earlyDeaths: 3 });
    expect(waitAfter(stopping, 1_000 + STEADY_MS)).to.deep.equal([0, 0]);
    expect(waitAfter(moveWorker({ state: 'starting', worker: a, since: 0, earlyDeaths: 0 }, { kind: 'stopping' }, 0), 60_000)).to.deep.equal([500, 1]);
    // A fork the system refused: the slot waits as after an early death.
    const refused = moveWorker<string>({ state: 'waiting', forkAt: 0, earlyDeaths: 1 }, { kind: 'fork-failed' }, 7_000);
    expect(refused).to.deep.equal({ state: 'waiting', forkAt: 7_000 + RESTART_DELAYS_MS[2], earlyDeaths: 2 });
  });

  it('leaves a life as it is on a message its state does not expect', function () {
    const serving: WorkerLife<string> = { state: 'serving', worker: a, since: 0, earlyDeaths: 0 };
    const waiting: WorkerLife<string> = { state: 'waiting', forkAt: 10, earlyDeaths: 1 };
    expect(moveWorker(serving, { kind: 'started' }, 5)).to.equal(serving);
    expect(moveWorker(serving, { kind: 'forked', worker: b }, 5)).to.equal(serving);
    expect(moveWorker(waiting, { kind: 'exited' }, 5)).to.equal(waiting);
    expect(moveWorker(waiting, { kind: 'started' }, 5)).to.equal(waiting);
    // A worker the supervisor is stopping that says it serves after all gets nothing.
    const closing = moveWorker(serving, { kind: 'close' }, 5);
    expect(moveWorker(closing, { kind: 'started' }, 6)).to.equal(closing);
  });

  it('replaces no worker once the supervisor stops: closing ones end closed, waiting slots at once', function () {
    const lives = new WorkerLives<string>(3);
    lives.moveSlot(0, { kind: 'forked', worker: a }, 0);
    lives.moveSlot(1, { kind: 'forked', worker: b }, 0);
    lives.move(b, { kind: 'started' }, 0);
    lives.moveSlot(2, { kind: 'forked', worker: c }, 0);
    lives.move(c, { kind: 'exited' }, 10);
    expect([lives.due(10), lives.due(509), lives.due(510), lives.nextForkAt()]).to.deep.equal([[], [], [2], 510]);
    expect(lives.close(20)).to.deep.equal([a, b]);
    expect(lives.lives().map((life) => life.state)).to.deep.equal(['closing', 'closing', 'closed']);
    expect(lives.move(a, { kind: 'exited' }, 30)).to.deep.equal({ state: 'closed' });
    expect(lives.move(b, { kind: 'exited' }, 30)).to.deep.equal({ state: 'closed' });
    expect([lives.due(100_000), lives.nextForkAt(), lives.workers()]).to.deep.equal([[], null, []]);
    // An exit of a worker no slot has (reported twice, say) moves nothing.
    expect(lives.move(c, { kind: 'exited' }, 40)).to.equal(null);
  });
});
