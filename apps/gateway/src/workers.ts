import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type net from 'node:net';
import { pino, type Logger } from 'pino';
import { ConfigError } from '@platform/config';
import { startAdminServer } from '@platform/http';
import type { GatewayConfig } from './config.js';
import { ConnectionHandOver, TAKE_TIMEOUT_MS, type ConnectionMessage, type Endpoint } from './hand-over.js';
import { countersOf, sumMetricsTexts } from './metrics-sum.js';

/**
 * Several processes serving one port (GATEWAY_WORKERS), forked with Node's cluster module. The
 * supervisor listens on the ports and hands each connection to the next serving worker in turn
 * (hand-over.ts: not cluster's own sharing, which can hold a connection for ever when its worker
 * dies), so one client's connections spread evenly.
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
export function answerSupervisor(answers: { adopt: (socket: net.Socket, endpoint: Endpoint) => void; metrics: () => string; ready: () => Promise<boolean> }): void {
  process.on('message', (message: SupervisorMessage, socket?: net.Socket) => {
    if (message?.kind === 'connection') {
      if (socket) answers.adopt(socket, message.endpoint);
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
const RESTART_DELAYS_MS = [500, 1_000, 5_000, 30_000];
const STOP_TIMEOUT_MS = 6_000;

/** Forks the workers, waits until every one serves the port, then answers the admin listener. */
export async function superviseGateway(config: GatewayConfig, options: { logger?: Logger } = {}): Promise<GatewaySupervisor> {
  const logger = options.logger ?? pino({ name: 'gateway', level: config.logLevel });
  let stopping = false;
  let asked = 0;
  const waiting = new Map<number, (message: WorkerMessage) => void>();
  /** Workers that said they serve the port, with the counters they last gave. */
  const serving = new Map<Worker, string>();
  const forked = new Set<Worker>();
  /** The counters of workers gone: a counter of /metrics never goes down when a worker dies. */
  let departed = '';
  let quickDeaths = 0;
  const handOver = new ConnectionHandOver({
    acceptFailed: (error) => logger.warn({ err: error }, 'accepting a client connection failed'),
    stuck: (worker, closed) => logger.error({ worker: worker.id, closed, waitedMs: TAKE_TIMEOUT_MS }, 'a gateway worker took no connection it was sent: out of the turn until it takes one'),
  });

  const fork = (): Promise<void> => {
    const worker = cluster.fork();
    const forkedAt = Date.now();
    forked.add(worker);
    worker.on('error', (error) => logger.warn({ err: error, worker: worker.id }, 'talking to a gateway worker failed'));
    worker.on('message', (message: WorkerMessage) => {
      if (message.kind === 'taken') handOver.taken(worker, message.id);
      else if (message.kind === 'stopping') handOver.retire(worker);
      else if (message.kind !== 'started') waiting.get(message.id)?.(message);
    });
    worker.once('exit', (code, signal) => {
      forked.delete(worker);
      handOver.gone(worker);
      const last = serving.get(worker);
      serving.delete(worker);
      if (last) departed = sumMetricsTexts([departed, countersOf(last)]);
      if (stopping) return;
      quickDeaths = Date.now() - forkedAt < 10_000 ? quickDeaths + 1 : 0;
      const delayMs = RESTART_DELAYS_MS[Math.min(quickDeaths, RESTART_DELAYS_MS.length - 1)];
      logger.error({ worker: worker.id, code, signal, restartInMs: delayMs }, 'a gateway worker exited; starting another');
      setTimeout(() => {
        if (!stopping) fork().catch((error: Error) => logger.error({ err: error }, 'a replacement gateway worker did not start'));
      }, delayMs).unref();
    });
    return new Promise((resolve, reject) => {
      worker.on('message', (message: WorkerMessage) => {
        if (message.kind !== 'started') return;
        serving.set(worker, '');
        handOver.serving(worker);
        resolve();
      });
      worker.once('exit', (code) => {
        // A worker refusing its configuration exits 78 (runService), having printed which variable.
        if (code === 78) reject(new ConfigError('GATEWAY_WORKERS', 'a worker refused the configuration (its message is above)'));
        else reject(new Error(`a gateway worker exited with ${code} while starting`));
      });
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

  /** Every serving worker's counters and gauges, kept for the day it dies; fails when one does not answer. */
  const gatherMetrics = async (): Promise<string[]> =>
    Promise.all(
      [...serving.keys()].map(async (worker) => {
        const answer = await ask(worker, 'metrics');
        const text = answer.kind === 'metrics' ? answer.text : '';
        if (serving.has(worker)) serving.set(worker, text);
        return text;
      }),
    );

  const stopWorkers = async () => {
    stopping = true;
    await Promise.all(
      [...forked].map(async (worker) => {
        const exited = once(worker, 'exit');
        worker.process.kill('SIGTERM');
        const forced = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(forced);
      }),
    );
  };

  let listening: { host: string; port: number; pooledPort: number | null };
  try {
    await Promise.all(Array.from({ length: config.workers }, () => fork()));
    // The ports open once every worker serves, as a single gateway's open once it can serve.
    const session = await handOver.listen(config.gateway.host, config.gateway.port, 'session');
    const pooled = config.gateway.pooledPort === null ? null : await handOver.listen(config.gateway.host, config.gateway.pooledPort, 'pooled');
    listening = { host: session.address, port: session.port, pooledPort: pooled?.port ?? null };
  } catch (error) {
    handOver.close();
    await stopWorkers();
    throw error;
  }
  const keeper = setInterval(() => void gatherMetrics().catch(() => {}), KEEP_COUNTERS_MS);
  keeper.unref();
  const admin = await startAdminServer({
    host: config.adminHost,
    port: config.adminPort,
    token: config.adminToken,
    realm: 'gateway admin',
    // The port is served while one worker is: healthy and ready then (a replacement may be waiting out its back-off).
    isAlive: () => [...serving.keys()].some((worker) => handOver.inTurn(worker)),
    isReady: async () => {
      // Workers that get connections: not one that is stopping, or stuck.
      const workers = [...serving.keys()].filter((worker) => handOver.inTurn(worker));
      if (workers.length === 0) return false;
      const answers = await Promise.all(workers.map((worker) => ask(worker, 'ready').catch(() => null)));
      return answers.every((answer) => answer?.kind === 'ready' && answer.ready);
    },
    metrics: async () => sumMetricsTexts([departed, ...(await gatherMetrics())]),
  });
  logger.info({ ...listening, workers: config.workers, adminUrl: admin.url }, 'gateway listening');
  return {
    ...listening,
    adminUrl: admin.url,
    close: async () => {
      clearInterval(keeper);
      handOver.close();
      await stopWorkers();
      await admin.close();
      logger.info('gateway stopped');
    },
  };
}
