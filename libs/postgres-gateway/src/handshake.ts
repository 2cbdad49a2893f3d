// One client connection, as the five steps of its handshake: negotiate encryption, read the startup
// packet, route the login, authenticate it, relay the session. Each step is a module of its own;
// this one holds what they share (the client's stream, the slots held, the deadline) and the one
// way a connection that fails any of them ends.
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { withDeadline } from '@platform/deadline';
import { authenticate, type AuthenticatedBackend } from './authenticate.js';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import { longClientKey } from './cancel-keys.js';
import { forwardCancel } from './cancel-request.js';
import type { ConnectionContext, GatewayLog, HandshakeState } from './context.js';
import { negotiate } from './negotiate.js';
import { PROTOCOL_3_2, errorResponse, refuseAtDeadline, withoutSourceFields } from './protocol.js';
import { QueryTracker } from './query-counters.js';
import { Refusal, refusals } from './refusals.js';
import { relaySession } from './relay.js';
import { decideRoute, lookUpRoute } from './route.js';
import { BackendError, startSession } from './session-start.js';
import { readLogin } from './startup.js';
import { pooledAuthenticate, type VerifierCache } from './pooled-login.js';
import { startPooledSession } from './pooled-start.js';
import type { ServerPools } from './server-pool.js';

/** What the pooled endpoint's connections share: the roles' verifiers and the pools. */
export interface PooledEndpoint {
  verifiers: VerifierCache;
  pools: ServerPools;
}

/** The step a connection is in; a connection that fails is logged with it. */
export type Step = 'negotiate' | 'startup' | 'route' | 'authenticate' | 'relay';

/**
 * The share of the handshake's time by which the control plane must have answered the login's
 * lookups (`@platform/deadline`): a control plane that stops answering gets the client its clear
 * 57P03 before the handshake's own deadline.
 */
const LOOKUP_SHARE = 0.9;

/**
 * Serves one client connection: TLS negotiation, the startup packet, routing, the authentication
 * relayed to the cluster (which checks the password), then the session's bytes both ways, counted.
 */
export async function serveConnection(socket: net.Socket, context: ConnectionContext, pooled: PooledEndpoint | null = null, acceptedAt = Date.now()): Promise<void> {
  socket.setNoDelay(true);
  // From the connection's accept: a connection a supervisor held for a worker has had part of its time.
  const handshake = new Handshake(socket, context.handshakeTimeoutMs - Math.max(0, Date.now() - acceptedAt));
  try {
    const packet = await negotiate(handshake, socket, context);
    if (packet.kind === 'cancel') {
      await forwardCancel(packet.processId, packet.secretKey, context, handshake.address);
      handshake.end();
      return;
    }

    handshake.step = 'startup';
    const login = readLogin(handshake, packet, context);

    handshake.step = 'route';
    const route = await withDeadline(handshake.lookupMs(), () => lookUpRoute(login.user, context));
    const decision = decideRoute(login, route, context.clusters);
    if (decision.kind === 'refused') throw decision.refusal;

    handshake.step = 'authenticate';
    let cluster: AuthenticatedBackend;
    if (pooled) {
      const authenticated = await pooledAuthenticate(handshake, login, decision, context, pooled.verifiers);
      if (decision.kind !== 'routed') throw new Error('an unknown name was authenticated');
      if (authenticated.kind === 'pooled') {
        handshake.step = 'relay';
        await startPooledSession(handshake, login, decision, authenticated.login, context, pooled.pools);
        return;
      }
      cluster = authenticated.cluster;
    } else {
      cluster = await authenticate(handshake, login, decision, context);
    }
    // Never for an unknown name: its exchange always ends in a refusal.
    if (decision.kind !== 'routed') throw new Error('an unknown name was authenticated');

    handshake.step = 'relay';
    // A tenant named at login must be one of the database's live tenants: otherwise every random
    // id would become a tenant series in /metrics and in insights.
    const check = decision.tenantToCheck === null ? null : { tenantId: decision.tenantToCheck, database: login.database, setting: login.tenantSetting };
    // A client of 3.2 gets a key that names the server's slot (any gateway routes it), one of 3.0
    // the server's own; this gateway keeps both while the session lasts (cancel-keys.ts).
    const clientKey = (secret: Buffer) => (login.protocolVersion >= PROTOCOL_3_2 ? longClientKey(decision.backend.index, secret) : secret);
    const key = await startSession(handshake.client, cluster.backend, cluster.reader, clientKey, check);
    if (key) context.sessionKeys.hold(key.processId, clientKey(key.secretKey), { backend: decision.backend, backendKey: key.secretKey }, handshake.client);
    handshake.started();
    const cell = context.counters?.cell(decision.route.database.id, decision.tenantId) ?? null;
    relaySession(handshake.client, handshake.reader.detach(), cluster.backend, cluster.reader.detach(), cell ? new QueryTracker(cell) : null, context);
  } catch (error) {
    handshake.fail(error, context.log);
  }
}

/** What one connection's steps share until its session starts, and how it ends if it does not. */
class Handshake implements HandshakeState {
  step: Step = 'negotiate';
  client: Duplex;
  reader: ByteReader;
  secure = false;
  backend: net.Socket | null = null;
  /** Login slots this connection holds until its session starts or it is refused. */
  private readonly releases: (() => void)[] = [];
  private readonly deadline: NodeJS.Timeout;
  private readonly lookupsDueAt: number;
  /** The handshake's deadline passed: the connection has been answered, whatever its steps do next. */
  private expired = false;

  constructor(
    private readonly socket: net.Socket,
    timeoutMs: number,
  ) {
    this.client = socket;
    this.reader = new ByteReader(socket);
    this.lookupsDueAt = Date.now() + timeoutMs * LOOKUP_SHARE;
    this.deadline = setTimeout(() => this.expire(), timeoutMs);
  }

  /** How long the control plane has left to answer this login's lookups. */
  lookupMs(): number {
    return Math.max(0, this.lookupsDueAt - Date.now());
  }

  /**
   * The deadline passed. Every refusal carries a SQLSTATE, this one too: the client's own slowness
   * (the gateway was waiting for its bytes) is PostgreSQL's 57014; anything else is the platform's
   * (a control plane or cluster that stopped answering), 57P03, to be tried again. Mid-TLS there
   * is no protocol to speak yet, and a connection already answered has had its word: those are
   * only closed.
   */
  private expire(): void {
    this.expired = true;
    this.backend?.destroy();
    this.release();
    const awaitingClient = this.step === 'negotiate' || this.step === 'startup' || this.reader.isWaiting;
    // Already answered (a refusal, or a cancel request's end) and waiting for the client to close: cut off.
    const answered = this.client.writableEnded;
    if (this.client.destroyed || answered || (this.step === 'negotiate' && !this.reader.isWaiting)) {
      this.client.destroy();
      return;
    }
    refuseAtDeadline(this.client, (awaitingClient ? refusals.clientTooSlow() : refusals.loginTimedOut()).fields);
  }

  get address(): string | undefined {
    return this.socket.remoteAddress;
  }

  hold(release: () => void): void {
    this.releases.push(release);
  }

  /** The session has started: its deadline and its login slots go. */
  started(): void {
    clearTimeout(this.deadline);
    this.release();
  }

  /**
   * A refusal goes to the client as an ErrorResponse, the backend's own as it came but for the
   * server's source file, line and routine (which no answer of the gateway carries); anything else
   * closes the connection.
   */
  fail(error: unknown, log: GatewayLog): void {
    this.backend?.destroy();
    this.release();
    // Answered at the deadline already; what failed since is that answer's doing.
    if (this.expired) return;
    if (error instanceof Refusal) {
      this.end(errorResponse(error.fields));
    } else if (error instanceof BackendError) {
      this.end(withoutSourceFields(error.raw));
    } else {
      clearTimeout(this.deadline);
      // A client that hangs up or refuses the certificate is the client's business; anything else is ours.
      if (isPeerFailure(error)) log.info({ reason: (error as Error).message, step: this.step }, 'client connection ended during the handshake');
      else log.warn({ err: error, step: this.step }, 'gateway connection failed');
      this.client.destroy();
    }
  }

  /**
   * Sends the last bytes of a connection that ends in its handshake, and ends it. Ending waits for
   * the client to close its side, so the handshake's deadline stays: a client that neither reads
   * nor closes (one still pushing a flood the gateway stopped reading) is cut off then.
   */
  end(last?: Buffer): void {
    if (this.client.destroyed || this.client.writableEnded) {
      clearTimeout(this.deadline);
      return;
    }
    this.client.once('close', () => clearTimeout(this.deadline));
    this.client.end(last);
  }

  private release(): void {
    for (const release of this.releases.splice(0)) release();
  }
}

function isPeerFailure(error: unknown): boolean {
  if (error instanceof ConnectionClosed) return true;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('ERR_SSL') || code === 'ECONNRESET' || code === 'EPIPE');
}
