// Step four of a connection on the session endpoint: the password. The gateway sends the SCRAM
// challenge itself and starts a backend only once the client answers it (scram-prelude.ts), so a
// login left at the challenge holds none, and unknown names go through the same steps with an
// exchange that cannot succeed. Both of the client's SCRAM messages are checked by PostgreSQL's
// rules, for every name, so the cluster only ever sees messages it accepts.
import { once } from 'node:events';
import net from 'node:net';
import type { DatabaseError } from 'pg-protocol';
import { parseBackendMessage, type BackendMessage } from './backend-parser.js';
import type { Backend } from './backends.js';
import { ByteReader } from './byte-reader.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { BackendType } from './message-types.js';
import { MAX_BACKEND_HANDSHAKE_MESSAGE, saslInitialResponse, saslResponse } from './protocol.js';
import { SqlState, refusals } from './refusals.js';
import type { LoginRequest } from './startup.js';
import type { RouteDecision } from './route.js';
import { SCRAM_MECHANISM } from './scram-messages.js';
import { exchangeServerFirst, failMockExchange, scramPrelude, waitUntil, type ScramPrelude } from './scram-prelude.js';

/** A backend whose cluster has accepted the password, and the reader of what it sends next. */
export interface AuthenticatedBackend {
  backend: net.Socket;
  reader: ByteReader;
}

/** The session endpoint's SCRAM exchange: the prelude, then the rest relayed to the credential's cluster. */
export async function authenticate(
  handshake: HandshakeState,
  login: LoginRequest,
  decision: Exclude<RouteDecision, { kind: 'refused' }>,
  context: ConnectionContext,
): Promise<AuthenticatedBackend> {
  return relayToCluster(handshake, await scramPrelude(handshake, login, decision, context), context);
}

/**
 * A routed login's exchange relayed to its credential's cluster, which checks the password. Once
 * the cluster has accepted it, a login routed to a database it may not have (another name, one not
 * ready) is refused: only then, so that nothing about a database is told before its password.
 */
export async function relayToCluster(handshake: HandshakeState, prelude: ScramPrelude, context: ConnectionContext): Promise<AuthenticatedBackend> {
  const cluster = await relayAuthentication(prelude, context, (socket) => (handshake.backend = socket));
  if (prelude.decision.refusalOnceAuthenticated) throw prelude.decision.refusalOnceAuthenticated;
  return cluster;
}

/**
 * A real credential's exchange with the cluster: the cluster's own challenge is answered with the
 * client's first message (the client already had the gateway's identical challenge), its
 * server-first-message goes to the client, the client's final message is checked and goes back,
 * and the verdict comes through, AuthenticationOk or a wrong password's refusal. How long the
 * cluster's steps took is recorded for unknown names' exchanges. Answers the authenticated backend;
 * `opened` has the backend's socket as soon as it exists, so that it is closed whatever happens.
 *
 * Anything else the cluster does before its verdict (it cannot be reached, is full, starting up,
 * hangs up, answers out of turn) is logged and shown to the client as an unknown name's exchange
 * would go on from that step: an error only real names could get would tell them apart.
 */
async function relayAuthentication(prelude: ScramPrelude, context: ConnectionContext, opened: (socket: net.Socket) => void): Promise<AuthenticatedBackend> {
  const { first, user, decision } = prelude;
  const schedule = context.authSchedule;
  let backend: net.Socket | undefined;
  let backendReader: ByteReader;
  let serverFirst: string;
  try {
    backend = await connectBackend(decision.backend, (socket) => {
      backend = socket;
      opened(socket);
    });
    backend.write(decision.startup);
    backendReader = new ByteReader(backend);
    const challenge = await backendAuthMessage(backendReader);
    const mechanisms = (challenge as { mechanisms?: string[] }).mechanisms ?? [];
    if (challenge.name !== 'authenticationSASL' || !mechanisms.includes(SCRAM_MECHANISM)) {
      throw new Error(`the cluster asked for ${challenge.name} (${mechanisms.join(', ')}) where it should ask for ${SCRAM_MECHANISM}`);
    }
    backend.write(saslInitialResponse(SCRAM_MECHANISM, first.data));
    const message = await backendAuthMessage(backendReader);
    if (message.name !== 'authenticationSASLContinue') throw new Error(`unexpected ${message.name} in place of the server-first-message`);
    serverFirst = (message as unknown as { data: string }).data;
  } catch (error) {
    context.log.warn({ user, err: error }, 'the cluster failed a login before its server-first-message; the client sees a failed password');
    backend?.destroy();
    return failMockExchange(prelude, context);
  }
  schedule.record('serverFirst', performance.now() - prelude.answered);
  const [nonceAttribute, ...saltAndIterations] = serverFirst.split(',');
  context.knownSalts.remember(user, saltAndIterations.join(','));
  const { final, finalAt } = await exchangeServerFirst(prelude, context, serverFirst, nonceAttribute.slice(2), () => backend?.destroy());
  // The verdict is the first message after the final one: SASLFinal (then Ok), or a wrong
  // password's refusal. Only those are recorded as the cluster's time to a verdict.
  const recordVerdict = () => schedule.record('verdict', performance.now() - finalAt);
  let accepted = false;
  try {
    backend!.write(saslResponse(final));
    for (;;) {
      const { raw, message } = await backendAuthMessageRaw(backendReader);
      if (!accepted && message.name === 'authenticationSASLFinal') recordVerdict();
      accepted = true;
      prelude.client.write(raw);
      if (message.name === 'authenticationOk') return { backend: backend!, reader: backendReader };
      if (message.name !== 'authenticationSASLFinal') throw new Error(`unexpected ${message.name} before authentication ended`);
    }
  } catch (error) {
    if (accepted) throw error instanceof ClusterRefusal ? refusals.fromCluster(error.fields, user) : error;
    if (error instanceof ClusterRefusal && error.fields.code === SqlState.invalidPassword) {
      recordVerdict();
      throw refusals.passwordFailed(user);
    }
    context.log.warn({ user, err: error }, 'the cluster failed a login before its verdict; the client sees a failed password');
    backend!.destroy();
    await waitUntil(finalAt, schedule.delayMs('verdict'));
    throw refusals.passwordFailed(user);
  }
}

/** An ErrorResponse of the cluster during authentication. */
class ClusterRefusal extends Error {
  constructor(readonly fields: DatabaseError) {
    super(`the cluster refused the login: ${fields.code} ${fields.message}`);
  }
}

/** The next authentication request of the cluster (notices before it go nowhere: an unknown name's exchange has none). */
async function backendAuthMessage(backendReader: ByteReader): Promise<BackendMessage> {
  return (await backendAuthMessageRaw(backendReader)).message;
}

async function backendAuthMessageRaw(backendReader: ByteReader): Promise<{ raw: Buffer; message: BackendMessage }> {
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    // A server older than the client's protocol says which it speaks: the client has had the
    // gateway's answer, and the server's key (4 bytes, then) still fits in a 3.2 key.
    if (raw[0] === BackendType.NegotiateProtocolVersion) continue;
    const message = parseBackendMessage(raw);
    if (message.name === 'notice') continue;
    if (message.name === 'error') throw new ClusterRefusal(message as DatabaseError);
    if (!message.name.startsWith('authentication')) throw new Error(`unexpected ${message.name} before authentication ended`);
    return { raw, message };
  }
}

/** A connection to the cluster; a failure to connect is the caller's to word (never the cluster's address). */
async function connectBackend(target: Backend, opened: (socket: net.Socket) => void): Promise<net.Socket> {
  const backend = net.connect({ host: target.host, port: target.port, noDelay: true });
  opened(backend);
  await once(backend, 'connect');
  return backend;
}
