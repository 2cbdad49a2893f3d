// One client connection, as the five steps of its handshake: negotiate encryption, read the startup
// packet, route the login, authenticate it, relay the session. Each step is a module of its own;
// this one holds what they share (the client's stream, the slots held, the deadline) and the one
// way a connection that fails any of them ends.
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { authenticate } from './authenticate.js';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import { forwardCancel } from './cancel-request.js';
import type { ConnectionContext, GatewayLog, HandshakeState } from './context.js';
import { negotiate } from './negotiate.js';
import { errorResponse } from './protocol.js';
import { QueryTracker } from './query-counters.js';
import { Refusal } from './refusals.js';
import { relaySession } from './relay.js';
import { decideRoute, lookUpRoute } from './route.js';
import { BackendError, startSession } from './session-start.js';
import { readLogin } from './startup.js';

/** The step a connection is in; a connection that fails is logged with it. */
export type Step = 'negotiate' | 'startup' | 'route' | 'authenticate' | 'relay';

/**
 * Serves one client connection: TLS negotiation, the startup packet, routing, the authentication
 * relayed to the cluster (which checks the password), then the session's bytes both ways, counted.
 */
export async function serveConnection(socket: net.Socket, context: ConnectionContext): Promise<void> {
  socket.setNoDelay(true);
  const handshake = new Handshake(socket, context.handshakeTimeoutMs);
  try {
    const packet = await negotiate(handshake, socket, context);
    if (packet.kind === 'cancel') {
      await forwardCancel(packet.processId, packet.secretKey, context);
      handshake.end();
      return;
    }

    handshake.step = 'startup';
    const login = readLogin(handshake, packet, context);

    handshake.step = 'route';
    const decision = decideRoute(login, await lookUpRoute(login.user, context), context.clusters);
    if (decision.kind === 'refused') throw decision.refusal;

    handshake.step = 'authenticate';
    const cluster = await authenticate(handshake, login, decision, context);
    // Never for an unknown name: its exchange always ends in a refusal.
    if (decision.kind !== 'routed') throw new Error('an unknown name was authenticated');

    handshake.step = 'relay';
    // A tenant named at login must be one of the database's live tenants: otherwise every random
    // id would become a tenant series in /metrics and in insights.
    const check = decision.tenantToCheck === null ? null : { tenantId: decision.tenantToCheck, database: login.database };
    await startSession(handshake.client, cluster.backend, cluster.reader, decision.backend.index, check);
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

  constructor(
    private readonly socket: net.Socket,
    timeoutMs: number,
  ) {
    this.client = socket;
    this.reader = new ByteReader(socket);
    this.deadline = setTimeout(() => {
      this.client.destroy();
      this.backend?.destroy();
    }, timeoutMs);
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

  /** A refusal goes to the client as an ErrorResponse, the backend's own as it came; anything else closes the connection. */
  fail(error: unknown, log: GatewayLog): void {
    this.backend?.destroy();
    this.release();
    if (error instanceof Refusal) {
      this.end(errorResponse(error.fields));
    } else if (error instanceof BackendError) {
      this.end(error.raw);
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
    if (this.client.destroyed) {
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
