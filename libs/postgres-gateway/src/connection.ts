import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { CREDENTIAL_ROLE_NAME, TENANT_CONTEXT_SETTING, type ConnectionRoute, type ConnectionRoutes } from '@platform/domain';
import { serialize } from 'pg-protocol';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import { backendOfProcessId, clientProcessId } from './cancel-keys.js';
import { failScramExchange } from './mock-scram.js';
import {
  MAX_AUTH_MESSAGE_LENGTH,
  MAX_STARTUP_PACKET_LENGTH,
  ProtocolViolation,
  SSL_ACCEPTED,
  SSL_REFUSED,
  backendKeyData,
  errorResponse,
  negotiateProtocolVersion,
  parseStartupPacket,
  startupMessage,
  type ErrorFields,
  type StartupPacket,
} from './protocol.js';
import { QueryTracker, type QueryCounters } from './query-counters.js';
import { relaySession } from './relay.js';
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
  log: GatewayLog;
  /** Connections open now, this one included; over maxConnections a new one is refused. */
  openConnections(): number;
  maxConnections: number;
}

/** What the backend may send during the handshake at most, per message. */
const MAX_BACKEND_HANDSHAKE_MESSAGE = 1 << 20;
/** Startup parameters the gateway sets itself or refuses, rather than passing on. */
const OWN_PARAMETERS = new Set(['user', 'database', 'options', 'replication']);

/** A reason to end the connection with an ErrorResponse. */
class Refusal extends Error {
  constructor(readonly fields: ErrorFields) {
    super(fields.message);
  }
}

function fatal(code: string, message: string, extra: Partial<ErrorFields> = {}): Refusal {
  return new Refusal({ severity: 'FATAL', code, message, ...extra });
}

/**
 * Serves one client connection: TLS negotiation, the startup packet, routing, the authentication
 * relayed to the cluster (which checks the password), then the session's bytes both ways, counted.
 */
export async function serveConnection(socket: net.Socket, context: ConnectionContext): Promise<void> {
  socket.setNoDelay(true);
  let client: Duplex = socket;
  let backend: net.Socket | null = null;
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
      if (packet.kind === 'unsupported') throw fatal('0A000', `unsupported frontend protocol ${packet.version >>> 16}.${packet.version & 0xffff}: server supports 3.0 to 3.0`);
      throw new ProtocolViolation('unexpected negotiation request');
    }
    if (context.openConnections() > context.maxConnections) throw fatal('53300', 'sorry, too many clients already');
    if (!secure && !context.allowPlain) {
      throw fatal('28000', 'the gateway accepts TLS connections only', { hint: 'Connect with sslmode=require, or sslmode=verify-full and the platform’s certificate authority.' });
    }

    const parameters = packet.parameters;
    const unrecognized = [...parameters.keys()].filter((name) => name.startsWith('_pq_.'));
    if (packet.minorVersion > 0 || unrecognized.length > 0) client.write(negotiateProtocolVersion(0, unrecognized));
    const user = parameters.get('user');
    if (!user) throw fatal('28000', 'no PostgreSQL user name specified in startup packet');
    const database = parameters.get('database') || user;
    const replication = parameters.get('replication');
    if (replication !== undefined && !['false', 'off', 'no', '0'].includes(replication.toLowerCase())) {
      throw fatal('0A000', 'replication connections are not supported through the gateway');
    }
    const requested = takeTenant(parameters);
    if ('invalid' in requested) {
      throw fatal('22023', `invalid value for parameter "${requested.invalid.name}": "${requested.invalid.value}"`, { hint: 'A tenant id is a UUID.' });
    }

    let route = CREDENTIAL_ROLE_NAME.test(user) ? await findRoute(context, user) : null;
    // The database's data is moving between servers, its source refusing logins: the login waits
    // for the switch (most of the handshake's time at most), then goes where the data is.
    const waitUntil = Date.now() + context.handshakeTimeoutMs * MOVE_WAIT_SHARE;
    while (route?.moving && Date.now() < waitUntil) {
      await new Promise((resolve) => setTimeout(resolve, MOVE_POLL_MS));
      route = await findRoute(context, user);
    }
    if (!route) {
      await failScramExchange(client, reader, user, context.mockSaltKey);
      throw passwordFailed(user);
    }
    const target = context.backendFor(route);
    const tenantId = route.tenantId ?? requested.tenantId;
    const options = [...requested.rest];
    // A scoped credential's tenant follows its role; the setting would change nothing.
    if (route.tenantId === null && tenantId !== null) options.push('-c', `${TENANT_CONTEXT_SETTING}=${tenantId}`);
    const forwarded: [string, string][] = [
      ['user', route.credentialId],
      ['database', route.database.physicalName],
    ];
    if (options.length > 0) forwarded.push(['options', joinOptions(options)]);
    for (const [name, value] of parameters) {
      if (!OWN_PARAMETERS.has(name) && !name.startsWith('_pq_.') && !isTenantParameter(name)) forwarded.push([name, value]);
    }
    const startup = startupMessage(forwarded);
    // The database's physical name and the tenant setting make the packet longer, and PostgreSQL
    // drops one over its limit without a word: say so here rather than close on the client.
    if (startup.length > MAX_STARTUP_PACKET_LENGTH) {
      throw fatal('08P01', 'invalid length of startup packet', { detail: `Routed to its database, the packet would be ${startup.length} bytes, over ${MAX_STARTUP_PACKET_LENGTH}.` });
    }
    backend = await connectBackend(target);
    backend.write(startup);

    const backendReader = new ByteReader(backend);
    await relayAuthentication(client, reader, backend, backendReader);
    // Authenticated by the cluster: now the name must be the credential's own database's.
    if (database !== route.database.name) throw fatal('3D000', `database "${database}" does not exist`);
    if (route.database.status !== 'READY') throw fatal('57P03', `database "${database}" is not ready yet`, { detail: `Its status is ${route.database.status}.` });
    await relaySessionStart(client, backendReader, target.index);
    clearTimeout(timer);

    const cell = context.counters?.cell(route.database.id, tenantId) ?? null;
    relaySession(client, reader.detach(), backend, backendReader.detach(), cell ? new QueryTracker(cell) : null, context);
  } catch (error) {
    backend?.destroy();
    if (error instanceof Refusal || error instanceof ProtocolViolation) {
      const fields = error instanceof Refusal ? error.fields : { severity: 'FATAL' as const, code: error.code, message: error.message };
      endKeepingDeadline(client, timer, errorResponse(fields));
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
    throw fatal('57P03', 'the gateway cannot look up credentials right now; try again shortly');
  }
}

function passwordFailed(user: string): Refusal {
  return fatal('28P01', `password authentication failed for user "${user}"`);
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

async function connectBackend(target: Backend): Promise<net.Socket> {
  const backend = net.connect({ host: target.host, port: target.port, noDelay: true });
  try {
    await once(backend, 'connect');
  } catch (error) {
    backend.destroy();
    throw fatal('08006', 'could not reach the database’s server', { detail: (error as Error).message });
  }
  return backend;
}

/** An ErrorResponse from the backend during the handshake: passed on to the client as it came. */
class BackendError extends Error {
  constructor(readonly raw: Buffer) {
    super('the backend refused the session');
  }
}

function parseBackendMessage(raw: Buffer): BackendMessage {
  let parsed: BackendMessage | undefined;
  new Parser().parse(raw, (message) => (parsed = message));
  if (!parsed) throw new Error(`could not parse a backend message of type ${raw[0]}`);
  return parsed;
}

/**
 * Passes the cluster's authentication requests to the client and the client's answers back, until
 * the cluster says AuthenticationOk (passed on too) or refuses (passed on as it came).
 */
async function relayAuthentication(client: Duplex, clientReader: ByteReader, backend: Duplex, backendReader: ByteReader): Promise<void> {
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    const message = parseBackendMessage(raw);
    if (message.name === 'error') throw new BackendError(raw);
    if (message.name === 'notice') {
      client.write(raw);
      continue;
    }
    if (!message.name.startsWith('authentication')) throw new Error(`unexpected ${message.name} before authentication ended`);
    client.write(raw);
    if (message.name === 'authenticationOk') return;
    // Every request but SASLFinal wants an answer.
    if (message.name === 'authenticationSASLFinal') continue;
    const answer = await clientReader.message(MAX_AUTH_MESSAGE_LENGTH);
    if (answer.type !== 'p') throw new ProtocolViolation(`expected password response, got message type ${answer.raw[0]}`);
    backend.write(answer.raw);
  }
}

/**
 * After authentication: parameter statuses and notices go to the client as they came, the backend's
 * key is replaced by one that names its cluster, and ReadyForQuery ends the handshake.
 */
async function relaySessionStart(client: Duplex, backendReader: ByteReader, clusterIndex: number): Promise<void> {
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    const message = parseBackendMessage(raw);
    if (message.name === 'error') throw new BackendError(raw);
    if (message.name === 'backendKeyData') {
      const { processID, secretKey } = message as unknown as { processID: number; secretKey: number };
      client.write(backendKeyData(clientProcessId(clusterIndex, processID), secretKey));
      continue;
    }
    client.write(raw);
    if (message.name === 'readyForQuery') return;
  }
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
