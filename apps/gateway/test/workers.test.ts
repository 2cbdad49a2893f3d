// GATEWAY_WORKERS: one port served by several processes. Which worker holds a client's connection
// is read from the operating system (each worker's sockets in /proc), not from the gateway's word.
import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import type pg from 'pg';
import { eventually, freePort, rejection } from '@platform/testing';
import { LoginLoad, type LoginAttempt } from './support/login-load.js';
import { connectVerified, runningStatement, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, cancelRequest, simpleQuery } from './support/raw-client.js';
import { connectOutcome, connectionsOn, holdersOn, isReaped, isRunning, signal, sslRequestOutcome, workersOf } from './support/worker-processes.js';

describe('gateway: workers sharing one port (GATEWAY_WORKERS)', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;
  let workers: number[];

  before(async function () {
    this.timeout(120_000);
    // A login's deadline counts from the supervisor's accept: 30 s leaves room for a worker frozen
    // 10 s (its connection served after) and for a replacement starting on a loaded machine (held logins).
    p = await startGatewayPlatform({ GATEWAY_WORKERS: '2', GATEWAY_INSIGHTS_FLUSH_MS: '200', GATEWAY_HANDSHAKE_TIMEOUT_MS: '30000' });
    db = await p.newDatabase();
    credential = await db.newCredential();
    workers = workersOf(p.gateway.child.pid!);
  });

  after(async function () {
    this.timeout(60_000);
    await p?.stop();
  });

  it('runs two workers and hands client connections to both in turn', async function () {
    expect(workers).to.have.length(2);
    const clients = await Promise.all(Array.from({ length: 6 }, () => connectVerified(p, credential)));
    try {
      const held = connectionsOn(p.gatewayPort, workers);
      expect(held.reduce((a, b) => a + b), `connections per worker ${held}`).to.equal(6);
      expect(Math.min(...held), `connections per worker ${held}`).to.be.at.least(2);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('counts each query once across workers, in /metrics and in the insights', async function () {
    this.timeout(60_000);
    const counted = await p.newDatabase();
    const owner = await counted.newCredential();
    const windowStart = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const clients = await Promise.all(Array.from({ length: 4 }, () => connectVerified(p, owner)));
    for (const client of clients) for (let i = 0; i < 5; i++) await client.query(`select ${i}`);
    expect(Math.min(...connectionsOn(p.gatewayPort, workers)), 'both workers served the load').to.be.at.least(1);
    const series = `gateway_queries_total{database_id="${counted.id}",tenant_id=""}`;
    expect((await p.metrics()).get('gateway_connections')).to.equal(4);
    await Promise.all(clients.map((client) => client.end()));
    await eventually(async () => ((await p.metrics()).get(series) === 20 ? true : undefined), 10_000, `${series} at 20`);
    const end = new Date(windowStart.getTime() + 3_600_000).toISOString();
    const insights = `${counted.D}/insights/query-performance?start=${windowStart.toISOString()}&end=${end}&granularity=1h`;
    await eventually(
      async () => {
        const answer = await p.api.request('GET', insights, { token: counted.token });
        expect(answer.status, answer.text).to.equal(200);
        const queries = Math.round(answer.body.points[0].proxyQueriesPerSecond * 3600);
        expect(queries).to.be.at.most(20);
        return queries === 20 ? true : undefined;
      },
      15_000,
      '20 queries in the insights',
    );
  });

  it('cancels a protocol 3.0 query whichever worker the cancel request reaches', async function () {
    this.timeout(60_000);
    // Round-robin hands the sessions and the cancel requests' connections to both workers alike:
    // some of these cancels reach the worker that does not hold the session.
    for (let round = 0; round < 4; round++) {
      const connection = await RawConnection.openTls(p.gatewayPort, p.ca);
      try {
        const keyData = (await connection.login(credential.id, db.name, credential.password)).find((message) => message.type === 'K')!;
        connection.write(simpleQuery('select pg_sleep(30)'));
        await runningStatement(p, credential, 'select pg_sleep');
        const started = Date.now();
        const socket = net.connect({ host: '127.0.0.1', port: p.gatewayPort });
        await once(socket, 'connect');
        socket.end(cancelRequest(keyData.body.readInt32BE(0), keyData.body.subarray(4)));
        const error = (await rejection(connection.until('Z'))) as Error & { fields: Record<string, string> };
        expect([error.fields.C, Date.now() - started < 5_000], `round ${round}`).to.deep.equal(['57014', true]);
      } finally {
        connection.end();
      }
    }
  });

  it('replaces a worker that dies: only its clients are cut, connections opened meanwhile are served or closed (never held), readiness comes back', async function () {
    this.timeout(90_000);
    const supervisor = p.gateway.child.pid!;
    const clients = await Promise.all(Array.from({ length: 4 }, () => connectVerified(p, credential)));
    for (const client of clients) await client.query('select 1');
    const series = `gateway_queries_total{database_id="${db.id}",tenant_id=""}`;
    const counted = (await p.metrics()).get(series)!;
    expect(counted, 'queries counted before the kill').to.be.at.least(4);
    const [victim, survivor] = workers;
    const onSurvivor = connectionsOn(p.gatewayPort, [survivor])[0];
    process.kill(victim, 'SIGKILL');
    // Connections opened as the worker dies: some reach the supervisor before it knows, and go to the
    // dead worker. Node's cluster sharing held those open for ever (client waiting, supervisor holding).
    const opened = Array.from({ length: 40 }, () => sslRequestOutcome(p.gatewayPort, 10_000));
    const outcomes = await Promise.all(
      clients.map((client: pg.Client) =>
        client.query('select 1 as one').then(
          () => 'answered',
          () => 'cut',
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'answered'), `${outcomes}`).to.have.length(onSurvivor);
    expect(outcomes.filter((outcome) => outcome === 'cut')).to.have.length(4 - onSurvivor);
    const meanwhile = await Promise.all(opened);
    expect(meanwhile.filter((outcome) => outcome === 'held'), `${meanwhile}`).to.deep.equal([]);
    expect(meanwhile.filter((outcome) => outcome === 'answered').length, `${meanwhile}`).to.be.at.least(1);
    // The supervisor keeps no copy of any of them (it closes its copy once a worker took one, or died).
    await eventually(async () => (connectionsOn(p.gatewayPort, [supervisor], true)[0] === 0 ? true : undefined), 5_000, 'no connection left in the supervisor');
    // Once the supervisor has seen the death (the dead worker reaped), every new connection is served.
    await eventually(async () => (workersOf(supervisor).includes(victim) ? undefined : true), 10_000, 'the dead worker reaped');
    const fresh = await connectVerified(p, credential);
    expect((await fresh.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
    await fresh.end();
    workers = await eventually(async () => {
      const now = workersOf(supervisor);
      return now.length === 2 && !now.includes(victim) ? now : undefined;
    }, 20_000, 'a replacement worker');
    await eventually(async () => ((await fetch(`${p.gateway.url}/readyz`)).status === 200 ? true : undefined), 20_000, 'ready again');
    // The dead worker's counts stay in the sum: a counter that went down would read as a reset.
    expect((await p.metrics()).get(series), series).to.be.at.least(counted + onSurvivor + 1);
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
  });

  /** Opens `count` sessions at once and answers how many each worker holds (then ends them). */
  async function spread(count: number): Promise<number[]> {
    const clients = await Promise.all(Array.from({ length: count }, () => connectVerified(p, credential)));
    try {
      return connectionsOn(p.gatewayPort, workers);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  }

  it('hands the replacement worker connections once it serves', async function () {
    this.timeout(30_000);
    // It serves once it has started (its control-plane connections open): until then the survivor gets every connection.
    await eventually(async () => (Math.min(...(await spread(6))) > 0 ? true : undefined), 20_000, 'connections on the replacement worker');
    expect(await spread(6), 'in turn').to.deep.equal([3, 3]);
  });

  it('takes a worker that takes no connection for 10 s out of the turn: those behind the one in its channel close, new ones go to the other, and it is back once it goes on', async function () {
    this.timeout(60_000);
    const [stuck] = workers;
    process.kill(stuck, 'SIGSTOP');
    try {
      const started = Date.now();
      // In turn: 3 to the other worker (answered), 3 to the stuck one: the first is in its channel
      // already (the kernel holds it for the worker), the two behind it wait in the supervisor.
      const closedAfterMs: number[] = [];
      const settled = Array.from({ length: 6 }, () =>
        sslRequestOutcome(p.gatewayPort, 30_000).then((outcome) => {
          if (outcome === 'closed') closedAfterMs.push(Date.now() - started);
          return outcome;
        }),
      );
      await eventually(async () => (closedAfterMs.length === 2 ? true : undefined), 20_000, 'two connections closed');
      expect(closedAfterMs.map((ms) => ms >= 9_000), `closed after ${closedAfterMs} ms`).to.deep.equal([true, true]);
      // Out of the turn: every new connection goes to the other worker.
      const meanwhile = await Promise.all(Array.from({ length: 4 }, () => sslRequestOutcome(p.gatewayPort, 10_000)));
      expect(meanwhile, 'opened while it is stuck').to.deep.equal(['answered', 'answered', 'answered', 'answered']);
      process.kill(stuck, 'SIGCONT');
      const outcomes = await Promise.all(settled);
      expect(outcomes.filter((outcome) => outcome === 'answered'), `${outcomes}`).to.have.length(4);
    } finally {
      process.kill(stuck, 'SIGCONT');
    }
    // It took the one in its channel: back in the turn.
    await eventually(async () => (Math.min(...(await spread(6))) > 0 ? true : undefined), 10_000, 'the worker back in the turn');
  });

  it('sends a worker that is stopping no more connections: those opened meanwhile go to the other', async function () {
    this.timeout(60_000);
    const supervisor = p.gateway.child.pid!;
    // Two sessions, one on each worker (in turn); the stopping worker ends its own once it told the supervisor.
    const clients = await Promise.all(Array.from({ length: 2 }, () => connectVerified(p, credential)));
    expect(connectionsOn(p.gatewayPort, workers)).to.deep.equal([1, 1]);
    const [stopping] = workers;
    // Frozen once its sessions are cut (it told the supervisor before it cut them): the connections
    // below meet it stopping, not gone. (Not events.once: pg emits 'error' on an idle connection's end.)
    let frozen = false;
    const cut = Promise.race(
      clients.map(
        (client) =>
          new Promise<void>((resolve) =>
            client.once('end', () => {
              // Once: the other client ends too, at the end of the test.
              if (!frozen) frozen = signal(stopping, 'SIGSTOP');
              resolve();
            }),
          ),
      ),
    );
    process.kill(stopping, 'SIGTERM');
    try {
      await cut;
      // Ready again once the supervisor has the worker out of the turn: frozen, it would answer no readiness question.
      await eventually(async () => ((await fetch(`${p.gateway.url}/readyz`)).status === 200 ? true : undefined), 20_000, 'the stopping worker out of the turn');
      const meanwhile = await Promise.all(Array.from({ length: 20 }, () => sslRequestOutcome(p.gatewayPort, 10_000)));
      expect(meanwhile.filter((outcome) => outcome !== 'answered'), `${meanwhile}`).to.deep.equal([]);
    } finally {
      signal(stopping, 'SIGCONT');
    }
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
    workers = await eventually(async () => {
      const now = workersOf(supervisor);
      return now.length === 2 && !now.includes(stopping) ? now : undefined;
    }, 20_000, 'a replacement worker');
  });

  it('comes up and serves though the first workers it forks are killed before they serve', async function () {
    this.timeout(90_000);
    let supervisor = 0;
    const killed: number[] = [];
    const seen = new Set<number>();
    let watch: NodeJS.Timeout | undefined;
    const port = await freePort();
    let whileNoneServed: Promise<'refused' | 'accepted'> | undefined;
    const startedAt = performance.now();
    // The first three workers die as soon as they exist (both first ones and one replacement), long
    // before they could serve: a worker takes a second or more to load, this looks every 2 ms.
    const starting = p.startAnotherGateway(
      { GATEWAY_WORKERS: '2', GATEWAY_PORT: String(port) },
      {
        spawned: (child) => {
          supervisor = child.pid!;
          watch = setInterval(() => {
            for (const pid of workersOf(supervisor).filter((pid) => !seen.has(pid))) {
              seen.add(pid);
              if (killed.length < 3 && signal(pid, 'SIGKILL')) killed.push(pid);
              // No worker has served yet (the other slot's replacement was forked a moment ago): the port refuses.
              if (killed.length === 3) whileNoneServed ??= connectOutcome(port);
            }
          }, 2);
        },
      },
    );
    const other = await starting.finally(() => clearInterval(watch));
    const upAfterMs = Math.round(performance.now() - startedAt);
    try {
      expect([killed.length, await whileNoneServed], 'workers killed as they started, and the port meanwhile').to.deep.equal([3, 'refused']);
      expect([other.process.child.pid, isRunning(supervisor)], 'the same supervisor, still running').to.deep.equal([supervisor, true]);
      const client = await connectVerified(p, credential, { port: port });
      expect((await client.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
      await client.end();
      // Both slots serve in the end: connections reach two workers, none of them one that was killed.
      await eventually(
        async () => {
          const now = workersOf(supervisor);
          if (now.length !== 2 || now.some((pid) => killed.includes(pid))) return undefined;
          const clients = await Promise.all(Array.from({ length: 4 }, () => connectVerified(p, credential, { port: port })));
          const held = connectionsOn(port, now);
          await Promise.all(clients.map((each) => each.end()));
          return Math.min(...held) > 0 ? true : undefined;
        },
        30_000,
        'two new workers serving',
      );
      console.log(`      up ${upAfterMs} ms after its start, its first ${killed.length} workers killed as they were forked`);
    } finally {
      await other.process.stop();
    }
  });

  it('under a steady login load, a killed worker costs only the logins it held, and with every worker killed new logins wait for a replacement instead of being refused', async function () {
    this.timeout(120_000);
    const supervisor = p.gateway.child.pid!;
    const url = new URL(credential.connectionUrl);
    const load = new LoginLoad(6, { host: url.hostname, port: p.gatewayPort, database: db.name, user: credential.id, password: credential.password, ssl: { ca: p.ca, servername: url.hostname } });
    const answeredSince = (since: number) => load.attempts.filter((attempt) => attempt.startedAt > since && attempt.outcome.kind === 'answered').length;
    try {
      await eventually(async () => (answeredSince(0) >= 12 ? true : undefined), 30_000, 'the load under way');

      // One worker killed while it holds a login in flight: which process held each connection is read just before.
      const [victim, survivor] = workers;
      const kill = await eventually(
        async () => {
          const holders = holdersOn(p.gatewayPort, [supervisor, ...workers]);
          if (!load.pending().some((attempt) => holders.get(attempt.localPort ?? -1)?.includes(victim))) return undefined;
          process.kill(victim, 'SIGKILL');
          return { holders, at: performance.now() };
        },
        20_000,
        'a login in flight on one worker',
      );
      const seenAt = await eventually(async () => (isReaped(victim) ? performance.now() : undefined), 10_000, 'the killed worker reaped');
      await eventually(async () => (answeredSince(seenAt) >= 12 ? true : undefined), 30_000, 'logins after the death was seen');
      const one = failuresBy(load.attempts, kill, seenAt, (pids) => (pids.includes(victim) ? 'on the killed worker' : pids.includes(survivor) ? 'on the other worker' : 'in the hand-over'));
      expect(one.forbidden, `failed logins: ${JSON.stringify(one.counts)}`).to.deep.equal([]);

      // Every worker killed at once, once both serve (both hold logins): new logins wait for a replacement to serve.
      const everyone = await eventually(
        async () => {
          const now = workersOf(supervisor);
          return now.length === 2 && !now.includes(victim) && Math.min(...connectionsOn(p.gatewayPort, now)) > 0 ? now : undefined;
        },
        30_000,
        'a replacement worker serving',
      );
      const before = load.attempts.length;
      const holders = holdersOn(p.gatewayPort, [supervisor, ...everyone]);
      for (const pid of everyone) process.kill(pid, 'SIGKILL');
      const all = { holders, at: performance.now() };
      const seenAllAt = await eventually(async () => (everyone.every(isReaped) ? performance.now() : undefined), 10_000, 'both workers reaped');
      await eventually(async () => (answeredSince(seenAllAt) >= 12 ? true : undefined), 40_000, 'logins after every worker died');
      const firstAnswer = Math.min(...load.attempts.filter((attempt) => attempt.startedAt > seenAllAt && attempt.outcome.kind === 'answered').map((attempt) => (attempt.outcome as { at: number }).at));
      const every = failuresBy(load.attempts.slice(before), all, seenAllAt, (pids) => (pids.some((pid) => everyone.includes(pid)) ? 'on a killed worker' : 'in the hand-over'));
      expect(every.forbidden, `failed logins: ${JSON.stringify(every.counts)}`).to.deep.equal([]);
      expect(isRunning(supervisor), 'the supervisor').to.equal(true);
      console.log(
        `      ${load.attempts.length} logins; one worker killed: failed ${JSON.stringify(one.counts)}; both killed: failed ${JSON.stringify(every.counts)}, ` +
          `the first login opened after both deaths were seen answered ${Math.round(firstAnswer - seenAllAt)} ms after`,
      );
    } finally {
      await load.stop();
    }
    workers = await eventually(
      async () => {
        const now = workersOf(supervisor);
        return now.length === 2 ? now : undefined;
      },
      20_000,
      'two workers',
    );
    await eventually(async () => ((await fetch(`${p.gateway.url}/readyz`)).status === 200 ? true : undefined), 20_000, 'ready again');
  });

  it('stops its workers when it stops', async function () {
    this.timeout(30_000);
    await p.gateway.stop();
    expect(workers.filter(isRunning)).to.deep.equal([]);
  });
});

/**
 * The failed attempts of a login load around a kill, by where they stood: a failure may come only
 * from a connection on a killed worker, or one on its way to a worker when it died (in the hand-over,
 * or opened between the kill and the supervisor's seeing the death). `forbidden` lists the others.
 */
function failuresBy(attempts: LoginAttempt[], kill: { holders: Map<number, number[]>; at: number }, seenAt: number, heldBy: (pids: number[]) => string): { counts: Record<string, number>; forbidden: string[] } {
  const counts: Record<string, number> = {};
  const forbidden: string[] = [];
  for (const attempt of attempts) {
    if (attempt.outcome.kind !== 'failed') continue;
    const where =
      attempt.outcome.at < kill.at
        ? 'before the kill'
        : attempt.startedAt > seenAt
          ? 'opened after the death was seen'
          : attempt.startedAt > kill.at
            ? 'opened as it died'
            : heldBy(kill.holders.get(attempt.localPort ?? -1) ?? []);
    counts[where] = (counts[where] ?? 0) + 1;
    if (where === 'before the kill' || where === 'opened after the death was seen' || where === 'on the other worker') forbidden.push(`${where}: ${attempt.outcome.error}`);
  }
  return { counts, forbidden };
}
