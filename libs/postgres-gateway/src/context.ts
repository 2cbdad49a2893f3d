// What every connection of one gateway shares: its settings, its counters and caps, its log. A
// module of its own so that each step of a connection, and the relay after them, can take it
// without importing the others.
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type tls from 'node:tls';
import type { ConnectionRoutes } from '@platform/domain';
import type { Backend } from './backends.js';
import type { ByteReader } from './byte-reader.js';
import type { CancelBudget, SessionKeys } from './cancel-keys.js';
import type { AuthSchedule, LoginSlots } from './login-limits.js';
import type { KnownSalts } from './mock-scram.js';
import type { QueryCounters } from './query-counters.js';

export interface GatewayLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** Passes a protocol 3.0 cancel request on to every gateway (the one holding its session forwards it). */
export interface CancelRelay {
  publish(processId: number, secretKey: Buffer): Promise<void>;
}

/** What every connection of one gateway shares. */
export interface ConnectionContext {
  routes: ConnectionRoutes;
  /** The regions' clusters, each at its region's slot (backends.ts chooses among them). */
  clusters: readonly Backend[];
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
  /** The protocol 3.0 sessions this gateway holds, by their cancel keys. */
  sessionKeys: SessionKeys;
  /** Where a 3.0 cancel request for a session held elsewhere goes; null: nowhere (a single gateway). */
  cancelRelay: CancelRelay | null;
  /** How many of those it passes on per second. */
  relayedCancels: CancelBudget;
  /** Connections open now, this one included; over maxConnections a new one is refused. */
  openConnections(): number;
  maxConnections: number;
}

/** One connection's handshake as its steps see it: the client's stream, and what its end must undo. */
export interface HandshakeState {
  /** The client's stream: the socket, or the TLS stream over it once negotiated. */
  client: Duplex;
  reader: ByteReader;
  /** Whether the client's stream is TLS. */
  secure: boolean;
  /** The client's address (the socket's, under any TLS). */
  readonly address: string | undefined;
  /** The backend's socket, as soon as it exists, so that a failed handshake closes it. */
  backend: net.Socket | null;
  /** Keeps a login slot until the session starts or the connection is refused. */
  hold(release: () => void): void;
}
