import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { CREDENTIAL_ROLE_NAME, TENANT_CONTEXT_SETTING, physicalDatabaseName, type ConnectionRoute, type ConnectionRoutes } from '@platform/domain';
import { serialize } from 'pg-protocol';
import type { DatabaseError } from 'pg-protocol';
import { parseBackendMessage, type BackendMessage } from './backend-parser.js';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import { backendOfProcessId, clientProcessId } from './cancel-keys.js';
import { AuthSchedule, LoginSlots, addressKey } from './login-limits.js';
import { KnownSalts, mockServerFirstMessage } from './mock-scram.js';
import {
  MAX_STARTUP_PACKET_LENGTH,
  SSL_ACCEPTED,
  SSL_REFUSED,
  TERMINATE,
  authenticationSasl,
  authenticationSaslContinue,
  backendKeyData,
  errorResponse,
  negotiateProtocolVersion,
  parseStartupPacket,
  saslInitialResponse,
  saslResponse,
  startupMessage,
  type StartupPacket,
} from './protocol.js';
import { FrontendType } from './message-types.js';
import { ProtocolViolation, Refusal, SqlState, refusals } from './refusals.js';
import { QueryTracker, type QueryCounters } from './query-counters.js';
import { relaySession } from './relay.js';
import {
  MAX_SASL_MESSAGE_LENGTH,
  SCRAM_MECHANISM,
  checkClientFinalMessage,
  parseClientFirstMessage,
  readSaslInitialResponse,
  type ClientFirstMessage,
} from './scram-messages.js';
import { isTenantParameter, joinOptions, takeTenant } from './startup-options.js';

/** A PostgreSQL server the gateway sends sessions to, and its index in cancel keys. */
export interface Backend {
  host: string;
  port: number;
  index: number;
}

export interface GatewayLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** What every connection of one gateway shares. */
export interface ConnectionContext {
  routes: ConnectionRoutes;
  backendFor(route: ConnectionRoute): Backend;
  backendAt(index: number): Promise<Backend | undefined>;
  /** TLS for SSLRequest; without it, SSLRequest is answered N. */
  tls: tls.SecureContext | null;
  /** Development only: accept connections without TLS. */
  allowPlain: boolean;
  /** Null: relay without counting (the benchmark's baseline). */
  counters: QueryCounters | null;
  handshakeTimeoutMs: number;
  /** How long a client may leave the backend's answers unread, or its side open after the session ended, before it is cut off. */
  clientStallMs: number;
  /** The key that derives the fixed salts of failed logins of unknown names. */
  mockSaltKey: Buffer;
  /** Logins in progress per client address, from the startup packet to the session (or refusal). */
  loginsPerAddress: LoginSlots;
  /** Logins in progress per user name, from the client's first SCRAM message (when a backend starts) on: the backstop for a cluster's backends. */
  loginsPerUser: LoginSlots;
  /** The same per user name and client address, so that one address cannot hold all of a name's logins. */
  loginsPerUserAddress: LoginSlots;
  /** How long the client has from the server-first-message to its final message, the step that holds a backend. */
  scramStepTimeoutMs: number;
  /** How long the cluster's steps of real logins took: an unknown name's exchange waits as long. */
  authSchedule: AuthSchedule;
  /** The salts clusters last sent for credentials, for an exchange that must fail without its cluster. */
  knownSalts: KnownSalts;
  log: GatewayLog;
  /** Connections open now, this one included; over maxConnections a new one is refused. */
  openConnections(): number;
  maxConnections: number;
}

/** What the backend may send during the handshake at most, per message. */
const MAX_BACKEND_HANDSHAKE_MESSAGE = 1 << 20;
/** Startup parameters the gateway sets itself or refuses, rather than passing on. */
const OWN_PARAMETERS = new Set(['user', 'database', 'options', 'replication']);

/**
 * Serves one client connection: TLS negotiation, the startup packet, routing, the authentication
 * relayed to the cluster (which checks the password), then the session's bytes both ways, counted.
 */
export async function serveConnection(socket: net.Socket, context: ConnectionContext): Promise<void> {
  socket.setNoDelay(true);
  let client: Duplex = socket;
  // Set from a callback as soon as the socket exists; the cast keeps TypeScript from taking it for always null.
  let backend = null as net.Socket | null;
  /** Login slots this connection holds until its session starts or it is refused. */
  const releases: (() => void)[] = [];
  const timer = setTimeout(() => {
    client.destroy();
    backend?.destroy();
  }, context.handshakeTimeoutMs);
  try {
    let reader = new ByteReader(socket);
    let secure = false;
    let packet: StartupPacket = parseStartupPacket(await reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
    // libpq may ask for GSS encryption first and TLS next: each at most once, before the startup.
    for (let negotiations = 0; (packet.kind === 'ssl' || packet.kind === 'gssenc') && negotiations < 2; negotiations++) {
      if (packet.kind === 'ssl' && context.tls && !secure) {
        if (reader.pendingBytes > 0) throw new ProtocolViolation('received unencrypted data after SSL request');
        reader.detach();
        socket.write(SSL_ACCEPTED);
        client = await upgradeToTls(socket, context.tls);
        secure = true;
        reader = new ByteReader(client);
      } else {
        client.write(SSL_REFUSED);
      }
      packet = parseStartupPacket(await reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
    }
    if (packet.kind === 'cancel') {
      await forwardCancel(packet.processId, packet.secretKey, context);
      endKeepingDeadline(client, timer);
      return;
    }
    if (packet.kind !== 'startup') {
      if (packet.kind === 'unsupported') throw refusals.unsupportedProtocol(packet.version);
      throw new ProtocolViolation('unexpected negotiation request');
    }
    if (context.openConnections() > context.maxConnections) throw refusals.tooManyClients();
    if (!secure && !context.allowPlain) throw refusals.tlsRequired();

    const parameters = packet.parameters;
    const unrecognized = [...parameters.keys()].filter((name) => name.startsWith('_pq_.'));
    if (packet.minorVersion > 0 || unrecognized.length > 0) client.write(negotiateProtocolVersion(0, unrecognized));
    const user = parameters.get('user');
    if (!user) throw refusals.noUserName();
    const database = parameters.get('database') || user;
    const replication = parameters.get('replication');
    if (replication !== undefined && !['false', 'off', 'no', '0'].includes(replication.toLowerCase())) {
      throw refusals.replicationUnsupported();
    }
    const requested = takeTenant(parameters);
    if ('invalid' in requested) {
      throw refusals.invalidTenantParameter(requested.invalid.name, requested.invalid.value);
    }

    const releaseAddress = context.loginsPerAddress.take(addressKey(socket.remoteAddress));
    if (!releaseAddress) {
      throw refusals.tooManyLoginsFromAddress(context.loginsPerAddress.max);
    }
    releases.push(releaseAddress);

    let route = CREDENTIAL_ROLE_NAME.test(user) ? await findRoute(context, user) : null;
    // The database's data is moving between servers, its source refusing logins: the login waits
    // for the switch (most of the handshake's time at most), then goes where the data is.
    const waitUntil = Date.now() + context.handshakeTimeoutMs * MOVE_WAIT_SHARE;
    while (route?.moving && Date.now() < waitUntil) {
      await new Promise((resolve) => setTimeout(resolve, MOVE_POLL_MS));
      route = await findRoute(context, user);
    }
    // The packet's length is checked as if the tenant setting went on whatever the credential's
    // scope, and with a physical name for unknown names (they all have one length), so that the
    // check fails or passes alike for every kind of name.
    const longest = routedStartup(parameters, user, route?.database.physicalName ?? STAND_IN_PHYSICAL_NAME, requested.tenantId, requested.rest);
    // The database's physical name and the tenant setting make the packet longer, and PostgreSQL
    // drops one over its limit without a word: say so here rather than close on the client.
    if (longest.length > MAX_STARTUP_PACKET_LENGTH) {
      throw refusals.routedStartupTooLong(longest.length, MAX_STARTUP_PACKET_LENGTH);
    }

    // The gateway asks for the password itself and starts a backend only once the client answers:
    // a login left at the challenge holds no backend, and unknown names wait for the same steps.
    // Both SCRAM messages are read and checked here by PostgreSQL's rules, for every name, so the
    // cluster only ever sees messages it accepts.
    client.write(authenticationSasl([SCRAM_MECHANISM]));
    let data = readSaslInitialResponse(await readSaslMessage(reader, user));
    // No initial response: as PostgreSQL does, an empty challenge, and the first message comes next.
    if (data === null) {
      client.write(authenticationSaslContinue(''));
      data = await readSaslMessage(reader, user);
    }
    const first = parseClientFirstMessage(data);
    const answered = performance.now();
    // Per name and address first: an address over its share of a name is told so, and takes
    // nothing from the name's slots that other addresses need.
    const releaseUserAddress = context.loginsPerUserAddress.take(`${addressKey(socket.remoteAddress)} ${user}`);
    if (!releaseUserAddress) {
      throw refusals.tooManyLoginsOfUserFromAddress(user, context.loginsPerUserAddress.max);
    }
    releases.push(releaseUserAddress);
    const releaseUser = context.loginsPerUser.take(user);
    if (!releaseUser) {
      throw refusals.tooManyLoginsOfUser(user, context.loginsPerUser.max);
    }
    releases.push(releaseUser);

    if (!route) {
      await failMockExchange(client, reader, first, user, context, answered);
      throw refusals.passwordFailed(user);
    }
    const target = context.backendFor(route);
    // A scoped credential's tenant follows its role; the setting would change nothing.
    const tenantId = route.tenantId ?? requested.tenantId;
    const cluster = await relayAuthentication({
      client,
      clientReader: reader,
      target,
      startup: routedStartup(parameters, route.credentialId, route.database.physicalName, route.tenantId === null ? tenantId : null, requested.rest),
      first,
      user,
      context,
      answered,
      opened: (socket) => (backend = socket),
    });
    const backendReader = cluster.reader;
    // Authenticated by the cluster: now the name must be the credential's own database's.
    if (database !== route.database.name) throw refusals.databaseDoesNotExist(database);
    if (route.database.status !== 'READY') throw refusals.databaseNotReady(database, route.database.status);
    // A tenant named at login must be one of the database's live tenants: otherwise every random
    // id would become a tenant series in /metrics and in insights. Asked in the session itself, as
    // the credential, before the client has it (a scoped credential's tenant is the platform's).
    const tenantToCheck = route.tenantId === null ? requested.tenantId : null;
    await relaySessionStart(client, cluster.backend, backendReader, target.index, tenantToCheck === null ? null : { tenantId: tenantToCheck, database });
    clearTimeout(timer);
    for (const release of releases) release();

    const cell = context.counters?.cell(route.database.id, tenantId) ?? null;
    relaySession(client, reader.detach(), cluster.backend, backendReader.detach(), cell ? new QueryTracker(cell) : null, context);
  } catch (error) {
    backend?.destroy();
    for (const release of releases) release();
    if (error instanceof Refusal) {
      endKeepingDeadline(client, timer, errorResponse(error.fields));
    } else if (error instanceof BackendError) {
      endKeepingDeadline(client, timer, error.raw);
    } else {
      clearTimeout(timer);
      // A client that hangs up or refuses the certificate is the client's business; anything else is ours.
      if (isPeerFailure(error)) context.log.info({ reason: (error as Error).message }, 'client connection ended during the handshake');
      else context.log.warn({ err: error }, 'gateway connection failed');
      client.destroy();
    }
  }
}

/**
 * Sends the last bytes of a connection that ends in its handshake, and ends it. Ending waits for
 * the client to close its side, so the handshake's deadline stays: a client that neither reads
 * nor closes (one still pushing a flood the gateway stopped reading) is cut off then.
 */
function endKeepingDeadline(client: Duplex, deadline: NodeJS.Timeout, last?: Buffer): void {
  if (client.destroyed) {
    clearTimeout(deadline);
    return;
  }
  client.once('close', () => clearTimeout(deadline));
  client.end(last);
}

function isPeerFailure(error: unknown): boolean {
  if (error instanceof ConnectionClosed) return true;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('ERR_SSL') || code === 'ECONNRESET' || code === 'EPIPE');
}

/** The route of a credential; a control plane that cannot answer is the client's clear error, not a silent close. */
/** How much of the handshake's time a login may wait for its database's move, and how often it looks. */
const MOVE_WAIT_SHARE = 0.8;
const MOVE_POLL_MS = 100;

async function findRoute(context: ConnectionContext, user: string): Promise<ConnectionRoute | null> {
  try {
    return await context.routes.find(user);
  } catch (error) {
    context.log.warn({ err: error }, 'looking up a credential failed');
    throw refusals.routesUnavailable();
  }
}

async function upgradeToTls(socket: net.Socket, secureContext: tls.SecureContext): Promise<tls.TLSSocket> {
  const secure = new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ['postgresql'] });
  const failed = once(secure, 'error').then(([error]) => {
    throw new ConnectionClosed(`TLS handshake failed: ${(error as Error).message}`);
  });
  await Promise.race([once(secure, 'secure'), failed]);
  failed.catch(() => {});
  return secure;
}

/** A connection to the cluster; a failure to connect is the caller's to word (never the cluster's address). */
async function connectBackend(target: Backend, opened: (socket: net.Socket) => void): Promise<net.Socket> {
  const backend = net.connect({ host: target.host, port: target.port, noDelay: true });
  opened(backend);
  await once(backend, 'connect');
  return backend;
}

/** An ErrorResponse from the backend during the handshake: passed on to the client as it came. */
class BackendError extends Error {
  constructor(readonly raw: Buffer) {
    super('the backend refused the session');
  }
}

/** A physical name for routing checks of names that are no credential: every physical name has its length. */
const STAND_IN_PHYSICAL_NAME = physicalDatabaseName('00000000-0000-0000-0000-000000000000');

/** The startup packet that goes to the cluster: the role, the physical database, the options with the tenant setting, the client's other parameters. */
function routedStartup(parameters: ReadonlyMap<string, string>, role: string, physicalName: string, tenantId: string | null, rest: readonly string[]): Buffer {
  const options = [...rest];
  if (tenantId !== null) options.push('-c', `${TENANT_CONTEXT_SETTING}=${tenantId}`);
  const forwarded: [string, string][] = [
    ['user', role],
    ['database', physicalName],
  ];
  if (options.length > 0) forwarded.push(['options', joinOptions(options)]);
  for (const [name, value] of parameters) {
    if (!OWN_PARAMETERS.has(name) && !name.startsWith('_pq_.') && !isTenantParameter(name)) forwarded.push([name, value]);
  }
  return startupMessage(forwarded);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `ms` after `since` (a performance.now() reading). */
async function waitUntil(since: number, ms: number): Promise<void> {
  const left = since + ms - performance.now();
  if (left > 0) await sleep(left);
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
 * Past the deadline `cut` closes the connection, for unknown names as for real ones.
 */
async function readFinalMessage(reader: ByteReader, user: string, context: ConnectionContext, cut: () => void): Promise<Buffer> {
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
async function failMockExchange(client: Duplex, reader: ByteReader, first: ClientFirstMessage, user: string, context: ConnectionContext, answered: number): Promise<never> {
  const serverFirst = mockServerFirstMessage(first, user, context.mockSaltKey, context.knownSalts.of(user));
  await waitUntil(answered, context.authSchedule.delayMs('serverFirst'));
  client.write(authenticationSaslContinue(serverFirst.message));
  const final = await readFinalMessage(reader, user, context, () => client.destroy());
  const finalAt = performance.now();
  checkClientFinalMessage(final, first, serverFirst.nonce);
  await waitUntil(finalAt, context.authSchedule.delayMs('verdict'));
  throw refusals.passwordFailed(user);
}

interface AuthenticationRelay {
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
async function relayAuthentication(relay: AuthenticationRelay): Promise<{ backend: net.Socket; reader: ByteReader }> {
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
    client.destroy();
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
    const message = parseBackendMessage(raw);
    if (message.name === 'notice') continue;
    if (message.name === 'error') throw new ClusterRefusal(message as DatabaseError);
    if (!message.name.startsWith('authentication')) throw new Error(`unexpected ${message.name} before authentication ended`);
    return { raw, message };
  }
}

/**
 * After authentication: parameter statuses and notices go to the client as they came, the backend's
 * key is replaced by one that names its cluster, and ReadyForQuery ends the handshake. With a tenant
 * to check, they are held back until the check has passed, so a refused client never had a session.
 */
async function relaySessionStart(client: Duplex, backend: Duplex, backendReader: ByteReader, clusterIndex: number, check: { tenantId: string; database: string } | null): Promise<void> {
  const held: Buffer[] = [];
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    const message = parseBackendMessage(raw);
    if (message.name === 'error') throw new BackendError(raw);
    if (message.name === 'backendKeyData') {
      const { processID, secretKey } = message as unknown as { processID: number; secretKey: number };
      held.push(backendKeyData(clientProcessId(clusterIndex, processID), secretKey));
    } else {
      held.push(raw);
    }
    if (message.name === 'readyForQuery') break;
    if (!check) client.write(held.pop()!);
  }
  if (check && !(await isLiveTenant(backend, backendReader, check.tenantId))) {
    backend.write(TERMINATE);
    throw refusals.tenantDoesNotExist(check.tenantId, check.database);
  }
  client.write(held.length === 1 ? held[0] : Buffer.concat(held));
}

/**
 * Whether `tenantId` is a live tenant, asked in the new session as its credential (never a more
 * privileged role): the tenants policy lets the session see the tenant it is set to. Everything is
 * qualified with its schema, so the session's search_path (which the client's options may set)
 * cannot put a function or operator of the customer's in its place. The id is a checked UUID.
 */
async function isLiveTenant(backend: Duplex, backendReader: ByteReader, tenantId: string): Promise<boolean> {
  backend.write(
    serialize.query(
      `select pg_catalog.count(*) operator(pg_catalog.>) 0 from public.tenants where id operator(pg_catalog.=) '${tenantId}'::pg_catalog.uuid and deleted is null`,
    ),
  );
  let live = false;
  let failure: DatabaseError | null = null;
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    const message = parseBackendMessage(raw);
    if (message.name === 'dataRow') live = (message as unknown as { fields: (string | null)[] }).fields[0] === 't';
    if (message.name === 'error') failure = message as DatabaseError;
    if (message.name === 'readyForQuery') break;
  }
  if (failure) {
    throw refusals.tenantCheckFailed(failure.code, failure.message);
  }
  return live;
}

async function forwardCancel(processId: number, secretKey: number, context: ConnectionContext): Promise<void> {
  const { clusterIndex, backendPid } = backendOfProcessId(processId);
  const target = await context.backendAt(clusterIndex);
  if (!target) return;
  const backend = net.connect({ host: target.host, port: target.port });
  try {
    await once(backend, 'connect');
    backend.end(serialize.cancel(backendPid, secretKey));
    await once(backend, 'close');
  } catch {
    // As PostgreSQL does, a cancel that cannot be delivered is dropped without a word.
  } finally {
    backend.destroy();
  }
}
