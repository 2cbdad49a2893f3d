import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { pino, type Logger } from 'pino';
import { ConfigError } from '@platform/config';
import { startAdminServer } from '@platform/http';
import type { GatewayConfig } from './config.js';
import { sumMetricsTexts } from './metrics-sum.js';

/**
 * Several processes serving one port (GATEWAY_WORKERS). Node's cluster module shares the
 * listening socket: the supervisor accepts and hands each connection to the next worker in turn
 * (round-robin, Node's default outside Windows), so one client's connections spread evenly.
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
  | { kind: 'started'; host: string; port: number }
  | { kind: 'metrics'; id: number; text: string }
  | { kind: 'ready'; id: number; ready: boolean };
type SupervisorMessage = { kind: 'metrics' | 'ready'; id: number };

export interface GatewaySupervisor {
  host: string;
  port: number;
  adminUrl: string;
  close(): Promise<void>;
}

/** A worker's answers to its supervisor's questions. */
export function answerSupervisor(answers: { metrics: () => string; ready: () => Promise<boolean> }): void {
  process.on('message', (message: SupervisorMessage) => {
    if (message?.kind === 'metrics') process.send?.({ kind: 'metrics', id: message.id, text: answers.metrics() } satisfies WorkerMessage);
    if (message?.kind === 'ready') void answers.ready().then((ready) => process.send?.({ kind: 'ready', id: message.id, ready } satisfies WorkerMessage));
  });
}

export function tellSupervisorStarted(host: string, port: number): void {
  process.send?.({ kind: 'started', host, port } satisfies WorkerMessage);
}

/**
 * A worker's share of the gateway's caps: connections and logins in progress are counted per
 * process, and round-robin hands each worker about 1/N of any one client's connections.
 */
export function workerShare(config: GatewayConfig): GatewayConfig {
  const share = (cap: number) => Math.max(1, Math.ceil(cap / config.workers));
  return {
    ...config,
    maxConnections: share(config.maxConnections),
    maxLoginsPerAddress: share(config.maxLoginsPerAddress),
    maxLoginsPerUser: share(config.maxLoginsPerUser),
    maxLoginsPerUserAddress: share(config.maxLoginsPerUserAddress),
  };
}

const ASK_TIMEOUT_MS = 2_000;
const RESTART_DELAYS_MS = [500, 1_000, 5_000, 30_000];
const STOP_TIMEOUT_MS = 6_000;

/** Forks the workers, waits until every one serves the port, then answers the admin listener. */
export async function superviseGateway(config: GatewayConfig, options: { logger?: Logger } = {}): Promise<GatewaySupervisor> {
  const logger = options.logger ?? pino({ name: 'gateway', level: config.logLevel });
  let stopping = false;
  let asked = 0;
  const waiting = new Map<number, (message: WorkerMessage) => void>();
  const live = new Set<Worker>();
  let quickDeaths = 0;

  const fork = (): Promise<{ host: string; port: number }> => {
    const worker = cluster.fork();
    const forkedAt = Date.now();
    live.add(worker);
    worker.on('message', (message: WorkerMessage) => {
      if (message.kind !== 'started') waiting.get(message.id)?.(message);
    });
    worker.once('exit', (code, signal) => {
      live.delete(worker);
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
        if (message.kind === 'started') resolve(message);
      });
      worker.once('exit', (code) => {
        // A worker refusing its configuration exits 78 (runService), having printed which variable.
        if (code === 78) reject(new ConfigError('GATEWAY_WORKERS', 'a worker refused the configuration (its message is above)'));
        else reject(new Error(`a gateway worker exited with ${code} while starting`));
      });
    });
  };

  /** Asks every live worker; fails when one does not answer in time. */
  const askAll = async (kind: SupervisorMessage['kind']): Promise<WorkerMessage[]> => {
    const workers = [...live].filter((worker) => worker.isConnected());
    if (workers.length < config.workers) throw new Error(`${config.workers - workers.length} of ${config.workers} workers are not running`);
    return Promise.all(
      workers.map(
        (worker) =>
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
            worker.send({ kind, id } satisfies SupervisorMessage);
          }),
      ),
    );
  };

  const stopWorkers = async () => {
    stopping = true;
    await Promise.all(
      [...live].map(async (worker) => {
        const exited = once(worker, 'exit');
        worker.process.kill('SIGTERM');
        const forced = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(forced);
      }),
    );
  };

  let listening: { host: string; port: number }[];
  try {
    listening = await Promise.all(Array.from({ length: config.workers }, () => fork()));
  } catch (error) {
    await stopWorkers();
    throw error;
  }
  const admin = await startAdminServer({
    host: config.adminHost,
    port: config.adminPort,
    token: config.adminToken,
    realm: 'gateway admin',
    isReady: async () => {
      try {
        return (await askAll('ready')).every((answer) => answer.kind === 'ready' && answer.ready);
      } catch {
        return false;
      }
    },
    metrics: async () => sumMetricsTexts((await askAll('metrics')).map((answer) => (answer.kind === 'metrics' ? answer.text : ''))),
  });
  const { host, port } = listening[0];
  logger.info({ host, port, workers: config.workers, adminUrl: admin.url }, 'gateway listening');
  return {
    host,
    port,
    adminUrl: admin.url,
    close: async () => {
      await stopWorkers();
      await admin.close();
      logger.info('gateway stopped');
    },
  };
}
