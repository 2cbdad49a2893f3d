import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type net from 'node:net';
import { pino, type Logger } from 'pino';
import { startAdminServer } from '@platform/http';
import type { GatewayConfig } from './config.js';
import { ConnectionHandOver, TAKE_TIMEOUT_MS, type ConnectionMessage, type Endpoint } from './hand-over.js';
import { countersOf, sumMetricsTexts } from './metrics-sum.js';
import { WorkerLives } from './worker-lives.js';

/**
 * Several processes serving one port (GATEWAY_WORKERS), forked with Node's cluster module. The
 * supervisor listens on the ports and hands each connection to the next serving worker in turn
 * (hand-over.ts: not cluster's own sharing, which can hold a connection for ever when its worker
 * dies), so one client's connections spread evenly. A worker's death is never the supervisor's: it
 * forks a replacement (worker-lives.ts says when).
 *
 * Each worker is a whole gateway (its own control-plane connections, routes cache, cancel relay and
 * insights writer under its own gateway id: insights add up across workers as across gateways).
 * Cancel requests reach the right worker: a 3.2 key names the server itself, a 3.0 one travels
 * through the control plane like one for another gateway. The supervisor answers the admin listener:
 * `/metrics` is the sum of every worker's (exact, or 503 when one does not answer), `/readyz` is
 * every worker's control-plane check.
 */

/** What workers and the supervisor say to each other. */
type WorkerMessage =
  | { kind: 'started' }
  | { kind: 'stopping' }
  | { kind: 'taken'; id: number }
  | { kind: 'metrics'; id: number; text: string }
  | { kind: 'ready'; id: number; ready: boolean };
type Question = { kind: 'metrics' | 'ready'; id: number };
type SupervisorMessage = Question | ConnectionMessage;

export interface GatewaySupervisor {
  host: string;
  port: number;
  pooledPort: number | null;
  adminUrl: string;
  close(): Promise<void>;
}

/**
 * A worker's answers to its supervisor: the connections it hands over (`adopt`; a message that came
 * without its connection, which the supervisor had closed meanwhile, is answered all the same) and
 * its questions (a send to a supervisor gone is dropped: the worker stops on 'disconnect').
 */
export function answerSupervisor(answers: { adopt: (socket: net.Socket, endpoint: Endpoint, acceptedAt: number) => void; metrics: () => string; ready: () => Promise<boolean> }): void {
  process.on('message', (message: SupervisorMessage, socket?: net.Socket) => {
    if (message?.kind === 'connection') {
      if (socket) answers.adopt(socket, message.endpoint, message.acceptedAt);
      tellSupervisor({ kind: 'taken', id: message.id });
    }
    if (message?.kind === 'metrics') tellSupervisor({ kind: 'metrics', id: message.id, text: answers.metrics() });
    if (message?.kind === 'ready') void answers.ready().then((ready) => tellSupervisor({ kind: 'ready', id: message.id, ready }));
  });
}

export function tellSupervisorStarted(): void {
  tellSupervisor({ kind: 'started' });
}

/** The worker is closing: new connections should go to the others (those already on their way it closes with its sessions). */
export function tellSupervisorStopping(): void {
  tellSupervisor({ kind: 'stopping' });
}

function tellSupervisor(message: WorkerMessage): void {
  if (process.connected) process.send?.(message, undefined, {}, () => {});
}

/**
 * A worker's share of the gateway's caps, of its control-plane pool and of each pooled endpoint's pool. Connections and logins in
 * progress are counted per process, and round-robin hands each worker about 1/N of any client's
 * connections: a share rounded down (at least 1) never lets more through than the cap, at the cost
 * of refusing a little early when one client's logins bunch on one worker (README: GATEWAY_WORKERS).
 */
export function workerShare(config: GatewayConfig): GatewayConfig {
  const share = (cap: number, least = 1) => Math.max(least, Math.floor(cap / config.workers));
  return {
    ...config,
    maxConnections: share(config.maxConnections),
    maxLoginsPerAddress: share(config.maxLoginsPerAddress),
    maxLoginsPerUser: share(config.maxLoginsPerUser),
    maxLoginsPerUserAddress: share(config.maxLoginsPerUserAddress),
    controlPlanePoolSize: share(config.controlPlanePoolSize, 2),
    // The pooled endpoint's server sessions too: each pool's size is divided among the workers (poolSize), so
    // that the workers' pools of one login together hold that pool's size at most.
    pools: { ...config.pools, workers: config.workers },
  };
}

const ASK_TIMEOUT_MS = 2_000;
/** How often the supervisor reads its workers' counters, so that a worker's death takes at most this much of them with it. */
const KEEP_COUNTERS_MS = 5_000;
const STOP_TIMEOUT_MS = 6_000;

/**
 * Starts the admin listener, forks the workers, and listens on the ports as soon as one worker
 * serves. A worker's death, at any moment, is never the supervisor's: its slot forks another after
 * a bounded back-off (worker-lives.ts). The supervisor fails only on its own account: its admin port
 * or the gateway's ports taken.
 */
export async function superviseGateway(config: GatewayConfig, options: { logger?: Logger } = {}): Promise<GatewaySupervisor> {
  const logger = options.logger ?? pino({ name: 'gateway', level: config.logLevel });
  const lives = new WorkerLives<Worker>(config.workers);
  let asked = 0;
  const waiting = new Map<number, (message: WorkerMessage) => void>();
  /** The counters each worker that served last gave, kept for the day it dies. */
  const counters = new Map<Worker, string>();
  /** The counters of workers gone: a counter of /metrics never goes down when a worker dies. */
  let departed = '';
  /** The next fork of a waiting slot, when one waits. */
  let nextFork: NodeJS.Timeout | undefined;
  const firstServing = deferred();
  /** Where the gateway listens, once a worker serves. */
  let ports: { host: string; port: number; pooledPort: number | null } | null = null;
  const handOver = new ConnectionHandOver(
    {
      acceptFailed: (error) => logger.warn({ err: error }, 'accepting a client connection failed'),
      stuck: (worker, closed) => logger.error({ worker: worker.id, closed, waitedMs: TAKE_TIMEOUT_MS }, 'a gateway worker took no connection it was sent: out of the turn until it takes one'),
      unserved: (closed, why) => logger.warn({ closed, why, holdMs: config.handshakeTimeoutMs, holdMax: config.maxConnections }, 'client connections closed while no gateway worker served'),
    },
    // Held no longer than their logins' deadline, which counts from the accept; no more than the gateway's connections.
    { max: config.maxConnections, timeoutMs: config.handshakeTimeoutMs },
  );

  /**
   * Forks every slot whose wait is over, and sets one timer for the next that waits. A timer may
   * fire a moment before Date.now() reaches the time it was set for (its clock is another): the slot
   * is not due yet then, and the timer is set again for what is left.
   */
  const forkDue = () => {
    for (const slot of lives.due(Date.now())) forkInto(slot);
    clearTimeout(nextFork);
    const next = lives.nextForkAt();
    nextFork = next === null ? undefined : setTimeout(forkDue, next - Date.now());
  };

  const forkInto = (slot: number) => {
    let worker: Worker;
    try {
      worker = cluster.fork();
    } catch (error) {
      const now = Date.now();
      const life = lives.moveSlot(slot, { kind: 'fork-failed' }, now);
      // forkDue, which called this, sets the timer for it.
      logger.error({ err: error, restartInMs: life.state === 'waiting' ? life.forkAt - now : null }, 'forking a gateway worker failed');
      return;
    }
    lives.moveSlot(slot, { kind: 'forked', worker }, Date.now());
    worker.on('error', (error) => logger.warn({ err: error, worker: worker.id }, 'talking to a gateway worker failed'));
    worker.on('message', (message: WorkerMessage) => {
      if (message.kind === 'taken') handOver.taken(worker, message.id);
      else if (message.kind === 'started') {
        const starting = lives.lifeOf(worker);
        const now = Date.now();
        if (lives.move(worker, { kind: 'started' }, now)?.state !== 'serving') return;
        logger.info({ worker: worker.id, startedInMs: starting?.state === 'starting' ? now - starting.since : null }, 'a gateway worker serves');
        handOver.serving(worker);
        firstServing.resolve();
      } else if (message.kind === 'stopping') {
        lives.move(worker, { kind: 'stopping' }, Date.now());
        handOver.retire(worker);
      } else waiting.get(message.id)?.(message);
    });
    worker.once('exit', (code, signal) => {
      handOver.gone(worker);
      const last = counters.get(worker);
      counters.delete(worker);
      if (last) departed = sumMetricsTexts([departed, countersOf(last)]);
      const now = Date.now();
      const life = lives.move(worker, { kind: 'exited' }, now);
      if (life?.state !== 'waiting') return;
      logger.error({ worker: worker.id, code, signal, earlyDeaths: life.earlyDeaths, restartInMs: life.forkAt - now }, 'a gateway worker exited; starting another');
      forkDue();
    });
  };

  /** One question to one worker; fails when it does not answer in time. */
  const ask = (worker: Worker, kind: Question['kind']) =>
    new Promise<WorkerMessage>((resolve, reject) => {
      const id = ++asked;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`worker ${worker.id} did not answer within ${ASK_TIMEOUT_MS} ms`));
      }, ASK_TIMEOUT_MS);
      waiting.set(id, (message) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(message);
      });
      worker.send({ kind, id } satisfies Question, undefined, {}, () => {});
    });

  /** The counters and gauges of every worker that served, kept for the day it dies; fails when one does not answer. */
  const gatherMetrics = async (): Promise<string[]> =>
    Promise.all(
      lives.served().map(async (worker) => {
        const answer = await ask(worker, 'metrics');
        const text = answer.kind === 'metrics' ? answer.text : '';
        if (lives.served().includes(worker)) counters.set(worker, text);
        return text;
      }),
    );

  /** Workers that get connections: serving, not stuck (a stopping one is out of `serving` already). */
  const inTurn = () => lives.workers('serving').filter((worker) => handOver.inTurn(worker));

  const admin = await startAdminServer({
    host: config.adminHost,
    port: config.adminPort,
    token: config.adminToken,
    realm: 'gateway admin',
    // Healthy while the ports are open and one worker gets connections (replacements may be waiting out their back-off).
    isAlive: () => ports !== null && inTurn().length > 0,
    isReady: async () => {
      const workers = inTurn();
      if (ports === null || workers.length === 0) return false;
      const answers = await Promise.all(workers.map((worker) => ask(worker, 'ready').catch(() => null)));
      return answers.every((answer) => answer?.kind === 'ready' && answer.ready);
    },
    metrics: async () => sumMetricsTexts([departed, ...(await gatherMetrics())]),
  });

  const stop = async () => {
    clearTimeout(nextFork);
    handOver.close();
    await Promise.all(
      lives.close(Date.now()).map(async (worker) => {
        const exited = once(worker, 'exit');
        worker.process.kill('SIGTERM');
        const forced = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(forced);
      }),
    );
    await admin.close();
  };

  forkDue();
  // The ports open once a worker serves (until then they refuse, as a single gateway's do while it starts).
  await firstServing.promise;
  try {
    const session = await handOver.listen(config.gateway.host, config.gateway.port, 'session');
    const pooled = config.gateway.pooledPort === null ? null : await handOver.listen(config.gateway.host, config.gateway.pooledPort, 'pooled');
    ports = { host: session.address, port: session.port, pooledPort: pooled?.port ?? null };
  } catch (error) {
    await stop();
    throw error;
  }
  const keeper = setInterval(() => void gatherMetrics().catch(() => {}), KEEP_COUNTERS_MS);
  keeper.unref();
  logger.info({ ...ports, workers: config.workers, adminUrl: admin.url }, 'gateway listening');
  return {
    ...ports,
    adminUrl: admin.url,
    close: async () => {
      clearInterval(keeper);
      await stop();
      logger.info('gateway stopped');
    },
  };
}

/** A promise and its resolver (resolving twice does nothing). */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}
