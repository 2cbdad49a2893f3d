import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { SERVER_TLS_POLICY } from '@platform/config';
import type { ConnectionRoutes } from '@platform/domain';
import { AuthSchedule, LoginSlots } from './login-limits.js';
import { KnownSalts } from './mock-scram.js';
import type { Backend } from './backends.js';
import { CancelBudget, SessionKeys } from './cancel-keys.js';
import { cancelFromPeer } from './cancel-request.js';
import type { CancelRelay, ConnectionContext, GatewayLog } from './context.js';
import { serveConnection, type PooledEndpoint } from './handshake.js';
import { VerifierCache, type VerifierSource } from './pooled-login.js';
import { DEFAULT_POOL_SETTINGS, ServerPools, type PoolSettings, type ServerConnectionState } from './server-pool.js';
import { QueryCounters } from './query-counters.js';

/** The port a client connected to: the session endpoint, or the pooled one. */
export type GatewayEndpoint = 'session' | 'pooled';

export interface GatewayOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  routes: ConnectionRoutes;
  /** The regions' clusters, each at its region's number (`regionBackend`); a database on a compute instance is on the instance's server. */
  backends: readonly Backend[];
  /** PEM certificate chain and key; without them SSLRequest is refused and only plain connections remain. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  allowPlain: boolean;
  countQueries: boolean;
  handshakeTimeoutMs: number;
  clientStallMs: number;
  maxConnections: number;
  /** Logins in progress from one client address at most (default DEFAULT_MAX_LOGINS_PER_ADDRESS). */
  maxLoginsPerAddress?: number;
  /** Logins in progress of one user name past its first SCRAM message, i.e. holding a backend, at most (default DEFAULT_MAX_LOGINS_PER_USER). */
  maxLoginsPerUser?: number;
  /** The same, per user name and client address (default DEFAULT_MAX_LOGINS_PER_USER_ADDRESS). */
  maxLoginsPerUserAddress?: number;
  /** How long a client has from the server-first-message to its final message (default DEFAULT_SCRAM_STEP_TIMEOUT_MS). */
  scramStepTimeoutMs?: number;
  mockSaltKey: Buffer;
  /** Where protocol 3.0 cancel requests for sessions of other gateways go (their keys name no server); without it they are dropped. */
  cancelRelay?: CancelRelay;
  /** How many of those per second at most (default DEFAULT_RELAYED_CANCELS_PER_SECOND). */
  relayedCancelsPerSecond?: number;
  /**
   * The pooled endpoint (transaction pooling): its port (0 picks a free one), the pools' settings,
   * and where roles' SCRAM verifiers are read. Absent: no pooled endpoint.
   */
  pooled?: { port: number; pools?: Partial<PoolSettings>; verifiers: VerifierSource };
  /** Tests only: a schedule with known waits in place of the one learnt from real logins. */
  authSchedule?: AuthSchedule;
  log: GatewayLog;
}

/** Far above what one application server opens at once, far below what would fill a cluster. */
export const DEFAULT_MAX_LOGINS_PER_ADDRESS = 100;
/** Half of a credential's 100 sessions: a pool's cold start fits, a flood of unfinished logins stays bounded. */
export const DEFAULT_MAX_LOGINS_PER_USER = 50;
/**
 * Per name and client address: what one application server's pool opens at once. Lower than the
 * per-name cap, so that one address that knows a name (names are in every connection string) can
 * no longer hold all of that name's logins.
 */
export const DEFAULT_MAX_LOGINS_PER_USER_ADDRESS = 20;
/**
 * A client computes its proof in milliseconds (4096 PBKDF2 rounds); a login stalled between the
 * server-first-message and its final message holds a backend, so it gets seconds, not the handshake's.
 */
export const DEFAULT_SCRAM_STEP_TIMEOUT_MS = 2_500;

/** Far more than clients cancel legitimately; a flood of guessed keys stops there. */
export const DEFAULT_RELAYED_CANCELS_PER_SECOND = 100;

function destroySocket(this: net.Socket): void {
  this.destroy();
}

/** The PostgreSQL gateway: one listening socket, every connection served on its own. */
export class PostgresGateway {
  readonly counters: QueryCounters | null;
  private readonly server: net.Server;
  private readonly pooledServer: net.Server | null = null;
  private readonly pooled: PooledEndpoint | null = null;
  private readonly sockets = new Set<net.Socket>();
  private closed = false;
  private readonly context: ConnectionContext;
  /** Every socket's 'close' listener (the socket is `this`). */
  private readonly forgetSocket: (this: net.Socket) => void;

  constructor(private readonly options: GatewayOptions) {
    const sockets = this.sockets;
    this.forgetSocket = function (this: net.Socket) {
      sockets.delete(this);
    };
    this.counters = options.countQueries ? new QueryCounters() : null;
    this.context = {
      routes: options.routes,
      clusters: options.backends,
      tls: options.tls ? tls.createSecureContext({ ...SERVER_TLS_POLICY, cert: options.tls.cert, key: options.tls.key }) : null,
      allowPlain: options.allowPlain,
      counters: this.counters,
      handshakeTimeoutMs: options.handshakeTimeoutMs,
      clientStallMs: options.clientStallMs,
      mockSaltKey: options.mockSaltKey,
      loginsPerAddress: new LoginSlots(options.maxLoginsPerAddress ?? DEFAULT_MAX_LOGINS_PER_ADDRESS),
      loginsPerUser: new LoginSlots(options.maxLoginsPerUser ?? DEFAULT_MAX_LOGINS_PER_USER),
      loginsPerUserAddress: new LoginSlots(options.maxLoginsPerUserAddress ?? DEFAULT_MAX_LOGINS_PER_USER_ADDRESS),
      scramStepTimeoutMs: options.scramStepTimeoutMs ?? DEFAULT_SCRAM_STEP_TIMEOUT_MS,
      authSchedule: options.authSchedule ?? new AuthSchedule(),
      knownSalts: new KnownSalts(),
      log: options.log,
      sessionKeys: new SessionKeys(),
      cancelRelay: options.cancelRelay ?? null,
      relayedCancels: new CancelBudget(options.relayedCancelsPerSecond ?? DEFAULT_RELAYED_CANCELS_PER_SECOND),
      openConnections: () => this.sockets.size,
      maxConnections: options.maxConnections,
    };
    this.server = this.listener(null);
    if (options.pooled) {
      const pools = new ServerPools({ ...DEFAULT_POOL_SETTINGS, ...options.pooled.pools }, (error) => options.log.warn({ err: error }, 'a pool could not open a server connection'));
      this.pooled = { verifiers: new VerifierCache(options.pooled.verifiers), pools };
      this.pooledServer = this.listener(this.pooled);
    }
  }

  private listener(pooled: PooledEndpoint | null): net.Server {
    return net.createServer({ noDelay: true }, (socket) => this.serve(socket, pooled));
  }

  private serve(socket: net.Socket, pooled: PooledEndpoint | null, acceptedAt = Date.now()): void {
    this.sockets.add(socket);
    // The same two listeners for every socket (emitters call them with the socket as `this`), and
    // `on` rather than `once` for 'close', which comes once: nothing per connection but the socket.
    socket.on('close', this.forgetSocket);
    // A reset or a broken pipe ends that connection only.
    socket.on('error', destroySocket);
    void serveConnection(socket, this.context, pooled, acceptedAt);
  }

  /**
   * Serves a client connection another process accepted (a worker's supervisor, which listens in its
   * place): on the session endpoint, or on the pooled one (closed when this gateway has none). After
   * `close`, the connection is closed. `acceptedAt` (Date.now() in the process that accepted it): the
   * handshake's deadline counts from then, time spent waiting to be handed over included.
   */
  adopt(socket: net.Socket, endpoint: GatewayEndpoint, acceptedAt = Date.now()): void {
    if (this.closed || (endpoint === 'pooled' && !this.pooled)) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    this.serve(socket, endpoint === 'pooled' ? this.pooled : null, acceptedAt);
  }

  /** Listens on the session port, and on the pooled port when there is one (`pooledPort`, null otherwise). */
  async listen(): Promise<{ host: string; port: number; pooledPort: number | null }> {
    const address = await this.listenOn(this.server, this.options.port);
    const pooledPort = this.pooledServer ? (await this.listenOn(this.pooledServer, this.options.pooled!.port)).port : null;
    return { host: address.address, port: address.port, pooledPort };
  }

  private async listenOn(server: net.Server, port: number): Promise<net.AddressInfo> {
    server.listen(port, this.options.host);
    await once(server, 'listening');
    // Past listening, an error is an accept that failed (EMFILE, say): that connection only, not the process.
    server.on('error', (error) => this.options.log.warn({ err: error }, 'accepting a client connection failed'));
    return server.address() as net.AddressInfo;
  }

  /** Server connections the pools hold now. */
  get pooledServerConnections(): number {
    return this.pooled?.pools.connections ?? 0;
  }

  /** The pools' open server connections in `state` (pinned: kept by a client that LISTENs); null without a pooled endpoint. */
  pooledServerSessions(state: ServerConnectionState): number | null {
    return this.pooled ? this.pooled.pools.count(state) : null;
  }

  /** A protocol 3.0 cancel request another gateway passed on (`cancelRelay`): forwarded if this gateway holds its session. */
  async cancelFromPeer(processId: number, secretKey: Buffer): Promise<void> {
    await cancelFromPeer(processId, secretKey, this.context);
  }

  get connections(): number {
    return this.sockets.size;
  }

  /** Stops listening and ends every session (their clients see the connection close). */
  async close(): Promise<void> {
    this.closed = true;
    const closed = [this.server, ...(this.pooledServer ? [this.pooledServer] : [])].map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const socket of this.sockets) socket.destroy();
    this.pooled?.pools.close();
    await Promise.all(closed);
  }
}
