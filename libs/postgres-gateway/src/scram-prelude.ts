// Step four's start, the same on both endpoints: the gateway sends the SCRAM challenge itself, reads
// and checks the client's first message by PostgreSQL's rules, takes the login slots of a real name,
// and ends a name that is no credential with an exchange that cannot succeed. What follows is each
// endpoint's own (the session endpoint relays the rest to the cluster, authenticate.ts; the pooled
// one checks the proof itself when it can, pooled-login.ts), and both read the client's final
// message here, within the SCRAM step's deadline.
import type { Duplex } from 'node:stream';
import type { ByteReader } from './byte-reader.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { addressKey } from './login-limits.js';
import { FrontendType } from './message-types.js';
import { mockServerFirstMessage } from './mock-scram.js';
import { authenticationSasl, authenticationSaslContinue, refuseAtDeadline } from './protocol.js';
import { ProtocolViolation, refusals } from './refusals.js';
import type { RouteDecision } from './route.js';
import { MAX_SASL_MESSAGE_LENGTH, SCRAM_MECHANISM, checkClientFinalMessage, parseClientFirstMessage, readSaslInitialResponse, type ClientFirstMessage } from './scram-messages.js';
import type { LoginRequest } from './startup.js';

export type RoutedDecision = Extract<RouteDecision, { kind: 'routed' }>;

/** The client's side of a SCRAM exchange under way: its first message read and checked. */
export interface ClientScram {
  client: Duplex;
  reader: ByteReader;
  user: string;
  first: ClientFirstMessage;
  /** When the client's first message came (performance.now()): a failed exchange's waits count from it. */
  answered: number;
}

/** A routed login past the prelude: the client has had the challenge, its first message is checked, its slots are held. */
export interface ScramPrelude extends ClientScram {
  decision: RoutedDecision;
}

/** The SCRAM prelude of a login on either endpoint; an unknown name's exchange goes on to its failure here. */
export async function scramPrelude(handshake: HandshakeState, login: LoginRequest, decision: Exclude<RouteDecision, { kind: 'refused' }>, context: ConnectionContext): Promise<ScramPrelude> {
  const { client, reader } = handshake;
  const user = login.user;
  const first = await readClientFirst(handshake, user);
  const scram: ClientScram = { client, reader, user, first, answered: performance.now() };
  holdUserSlots(handshake, user, context);
  if (decision.kind === 'unknown') return failMockExchange(scram, context);
  return { ...scram, decision };
}

/** The SASL challenge, and the client's first message read and checked. */
async function readClientFirst(handshake: HandshakeState, user: string): Promise<ClientFirstMessage> {
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
function holdUserSlots(handshake: HandshakeState, user: string, context: ConnectionContext): void {
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
 * Sends the server-first-message, then reads the client's final message and checks it against the
 * client's first and the exchange's `nonce`; answers it and when it came (performance.now()). The
 * final message is due within the SCRAM step's deadline: until it comes, a real name's login holds a
 * backend of the cluster, and a stalled one must not hold it for the whole handshake. Past the
 * deadline the client is refused with PostgreSQL's 57014, for unknown names as for real ones, and
 * `cut` lets go of what the exchange holds.
 */
export async function exchangeServerFirst(scram: ClientScram, context: ConnectionContext, serverFirst: string, nonce: string, cut: () => void = () => {}): Promise<{ final: Buffer; finalAt: number }> {
  const { client, reader, user } = scram;
  client.write(authenticationSaslContinue(serverFirst));
  const deadline = setTimeout(() => {
    refuseAtDeadline(client, refusals.clientTooSlow().fields);
    cut();
  }, context.scramStepTimeoutMs);
  let final: Buffer;
  try {
    final = await readSaslMessage(reader, user);
  } finally {
    clearTimeout(deadline);
  }
  const finalAt = performance.now();
  checkClientFinalMessage(final, scram.first, nonce);
  return { final, finalAt };
}

/**
 * An exchange that fails, step for step a real one's: the server-first-message after as long as
 * the cluster took for a recent real login (counted from the client's first message, so time
 * already spent counts), the same checks of the client's final message, and the refusal after as
 * long as a cluster's verdict. For unknown names, and for real ones whose cluster failed before its
 * own server-first-message.
 */
export async function failMockExchange(scram: ClientScram, context: ConnectionContext): Promise<never> {
  const serverFirst = mockServerFirstMessage(scram.first, scram.user, context.mockSaltKey, context.knownSalts.of(scram.user));
  await waitUntil(scram.answered, context.authSchedule.delayMs('serverFirst'));
  const { finalAt } = await exchangeServerFirst(scram, context, serverFirst.message, serverFirst.nonce);
  await waitUntil(finalAt, context.authSchedule.delayMs('verdict'));
  throw refusals.passwordFailed(scram.user);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `ms` after `since` (a performance.now() reading). */
export async function waitUntil(since: number, ms: number): Promise<void> {
  const left = since + ms - performance.now();
  if (left > 0) await sleep(left);
}
