// Step four of a connection: the password. The gateway sends the SCRAM challenge itself and starts a
// backend only once the client answers it, so a login left at the challenge holds none, and unknown
// names go through the same steps with an exchange that cannot succeed. Both of the client's SCRAM
// messages are checked here by PostgreSQL's rules, for every name, so the cluster only ever sees
// messages it accepts.
import { once } from 'node:events';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { DatabaseError } from 'pg-protocol';
import { parseBackendMessage, type BackendMessage } from './backend-parser.js';
import type { Backend } from './backends.js';
import { ByteReader } from './byte-reader.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { addressKey } from './login-limits.js';
import { BackendType, FrontendType } from './message-types.js';
import { mockServerFirstMessage } from './mock-scram.js';
import { MAX_BACKEND_HANDSHAKE_MESSAGE, authenticationSasl, authenticationSaslContinue, refuseAtDeadline, saslInitialResponse, saslResponse } from './protocol.js';
import { ProtocolViolation, SqlState, refusals } from './refusals.js';
import type { LoginRequest } from './startup.js';
import type { RouteDecision } from './route.js';
import {
  MAX_SASL_MESSAGE_LENGTH,
  SCRAM_MECHANISM,
  checkClientFinalMessage,
  parseClientFirstMessage,
  readSaslInitialResponse,
  type ClientFirstMessage,
} from './scram-messages.js';

/** A backend whose cluster has accepted the password, and the reader of what it sends next. */
export interface AuthenticatedBackend {
  backend: net.Socket;
  reader: ByteReader;
}

/**
 * Runs the SCRAM exchange: with the credential's cluster for a routed login (answering the
 * cluster's own challenge with the client's first message), with no one for an unknown name, which
 * ends as a wrong password would. Once the cluster has accepted the password, a login routed to a
 * database it may not have (another name, one not ready) is refused: only then, so that nothing
 * about a database is told before its password.
 */
export async function authenticate(
  handshake: HandshakeState,
  login: LoginRequest,
  decision: Exclude<RouteDecision, { kind: 'refused' }>,
  context: ConnectionContext,
): Promise<AuthenticatedBackend> {
  const { client, reader } = handshake;
  const user = login.user;
  const first = await readClientFirst(handshake, user);
  const answered = performance.now();
  holdUserSlots(handshake, user, context);

  if (decision.kind === 'unknown') return failMockExchange(client, reader, first, user, context, answered);
  const cluster = await relayAuthentication({
    client,
    clientReader: reader,
    target: decision.backend,
    startup: decision.startup,
    first,
    user,
    context,
    answered,
    opened: (socket) => (handshake.backend = socket),
  });
  if (decision.refusalOnceAuthenticated) throw decision.refusalOnceAuthenticated;
  return cluster;
}

/** The SASL challenge, and the client's first message read and checked. */
export async function readClientFirst(handshake: HandshakeState, user: string): Promise<ClientFirstMessage> {
  const { client, reader } = handshake;
  client.write(authenticationSasl([SCRAM_MECHANISM]));
  let data = readSaslInitialResponse(await readSaslMessage(reader, user));
  // No initial response: as PostgreSQL does, an empty challenge, and the first message comes next.
  if (data === null) {
    client.write(authenticationSaslContinue(''));
    data = await readSaslMessage(reader, user);
  }
  return parseClientFirstMessage(data);
}

/**
 * From the client's first SCRAM message on, a real name's login holds a backend: it takes a slot
 * per name and address first (an address over its share of a name is told so, and takes nothing
 * from the name's slots that other addresses need), then one per name.
 */
export function holdUserSlots(handshake: HandshakeState, user: string, context: ConnectionContext): void {
  const releaseUserAddress = context.loginsPerUserAddress.take(`${addressKey(handshake.address)} ${user}`);
  if (!releaseUserAddress) throw refusals.tooManyLoginsOfUserFromAddress(user, context.loginsPerUserAddress.max);
  handshake.hold(releaseUserAddress);
  const releaseUser = context.loginsPerUser.take(user);
  if (!releaseUser) throw refusals.tooManyLoginsOfUser(user, context.loginsPerUser.max);
  handshake.hold(releaseUser);
}

/**
 * The body of the client's next SASL message ('p'), read as PostgreSQL reads it: the type is
 * checked before the length, and a length past its limit for SASL messages is a failed login
 * (PostgreSQL logs that one and answers as for a wrong password), not a protocol error.
 */
async function readSaslMessage(reader: ByteReader, user: string): Promise<Buffer> {
  const type = (await reader.peek(1))[0];
  if (type !== FrontendType.SaslResponse) throw new ProtocolViolation(`expected SASL response, got message type ${type}`);
  const length = (await reader.peek(5)).readInt32BE(1);
  if (length < 4 || length > MAX_SASL_MESSAGE_LENGTH) throw refusals.passwordFailed(user);
  return (await reader.message(MAX_SASL_MESSAGE_LENGTH)).body;
}

/**
 * The client's final message, due within the SCRAM step's deadline: until it comes, a real name's
 * login holds a backend of the cluster, and a stalled one must not hold it for the whole handshake.
 * Past the deadline `cut` ends the connection with PostgreSQL's 57014, for unknown names as for real ones.
 */
export async function readFinalMessage(reader: ByteReader, user: string, context: ConnectionContext, cut: () => void): Promise<Buffer> {
  const deadline = setTimeout(cut, context.scramStepTimeoutMs);
  try {
    return await readSaslMessage(reader, user);
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * An exchange that fails, step for step a real one's: the server-first-message after as long as
 * the cluster took for a recent real login (counted from the client's first message, so time
 * already spent counts), the same checks of the client's final message, and the refusal after as
 * long as a cluster's verdict. For unknown names, and for real ones whose cluster failed before its
 * own server-first-message.
 */
export async function failMockExchange(client: Duplex, reader: ByteReader, first: ClientFirstMessage, user: string, context: ConnectionContext, answered: number): Promise<never> {
  const serverFirst = mockServerFirstMessage(first, user, context.mockSaltKey, context.knownSalts.of(user));
  await waitUntil(answered, context.authSchedule.delayMs('serverFirst'));
  client.write(authenticationSaslContinue(serverFirst.message));
  const final = await readFinalMessage(reader, user, context, () => refuseAtDeadline(client, refusals.clientTooSlow().fields));
  const finalAt = performance.now();
  checkClientFinalMessage(final, first, serverFirst.nonce);
  await waitUntil(finalAt, context.authSchedule.delayMs('verdict'));
  throw refusals.passwordFailed(user);
}

export interface AuthenticationRelay {
  client: Duplex;
  clientReader: ByteReader;
  target: Backend;
  /** The startup packet for the cluster. */
  startup: Buffer;
  /** The client's first message, already read and checked. */
  first: ClientFirstMessage;
  user: string;
  context: ConnectionContext;
  /** When the client's first message came (performance.now()). */
  answered: number;
  /** Called with the backend's socket as soon as it exists, so that it is closed whatever happens. */
  opened(socket: net.Socket): void;
}

/**
 * A real credential's exchange with the cluster: the cluster's own challenge is answered with the
 * client's first message (the client already had the gateway's identical challenge), its
 * server-first-message goes to the client, the client's final message is checked and goes back,
 * and the verdict comes through, AuthenticationOk or a wrong password's refusal. How long the
 * cluster's steps took is recorded for unknown names' exchanges. Answers the authenticated backend.
 *
 * Anything else the cluster does before its verdict (it cannot be reached, is full, starting up,
 * hangs up, answers out of turn) is logged and shown to the client as an unknown name's exchange
 * would go on from that step: an error only real names could get would tell them apart.
 */
export async function relayAuthentication(relay: AuthenticationRelay): Promise<{ backend: net.Socket; reader: ByteReader }> {
  const { client, clientReader, first, user, context } = relay;
  const schedule = context.authSchedule;
  let backend: net.Socket | undefined;
  let backendReader: ByteReader;
  let serverFirst: string;
  try {
    backend = await connectBackend(relay.target, (socket) => {
      backend = socket;
      relay.opened(socket);
    });
    backend.write(relay.startup);
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
    return failMockExchange(client, clientReader, first, user, context, relay.answered);
  }
  schedule.record('serverFirst', performance.now() - relay.answered);
  const [nonceAttribute, ...saltAndIterations] = serverFirst.split(',');
  context.knownSalts.remember(user, saltAndIterations.join(','));
  client.write(authenticationSaslContinue(serverFirst));
  const final = await readFinalMessage(clientReader, user, context, () => {
    refuseAtDeadline(client, refusals.clientTooSlow().fields);
    backend?.destroy();
  });
  const finalAt = performance.now();
  checkClientFinalMessage(final, first, nonceAttribute.slice(2));
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
      client.write(raw);
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `ms` after `since` (a performance.now() reading). */
async function waitUntil(since: number, ms: number): Promise<void> {
  const left = since + ms - performance.now();
  if (left > 0) await sleep(left);
}
