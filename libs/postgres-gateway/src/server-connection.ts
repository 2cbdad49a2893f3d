// One server session of a pooled endpoint's pool: its socket, the key to cancel what it runs, the
// prepared statements it holds, whose session it is now, and where it is in its life (state, moved by
// its pool alone). Opened by the gateway itself with the ClientKey a client of the role proved.
import { once } from 'node:events';
import net from 'node:net';
import { parseBackendMessage } from './backend-parser.js';
import type { Backend } from './backends.js';
import { ByteReader } from './byte-reader.js';
import { BackendType } from './message-types.js';
import { MAX_BACKEND_HANDSHAKE_MESSAGE, PROTOCOL_3_0, readBackendKeyData, saslInitialResponse, saslResponse, startupMessage } from './protocol.js';
import { ScramClient, type ScramVerifier } from './scram-keys.js';
import { SCRAM_MECHANISM } from './scram-messages.js';

/** What opens a pool's connections: where, as whom, and the keys a client of the role proved. */
export interface PoolLogin {
  backend: Backend;
  physicalName: string;
  role: string;
  verifier: ScramVerifier;
  clientKey: Buffer;
  /** Sessions the login may hold on its server (ConnectionRoute's, or its cluster's catalog); null: none known. */
  connectionLimit: number | null;
}

/** Who reads a lent connection's server messages now: the client holding it, or a login's exchange. */
export interface ServerListener {
  data(chunk: Buffer): void;
  /** The server closed the connection. */
  closed(): void;
}

/**
 * Where a server connection is in its life, moved by its pool alone: idle in the pool, lent to one
 * client for a transaction, pinned to one client for the rest of its session (it LISTENs: its
 * notifications come at any time), or closed.
 */
export type ServerConnectionState = 'idle' | 'lent' | 'pinned' | 'closed';

/** One server session of a pool. */
export class ServerConnection {
  state: ServerConnectionState = 'lent';
  /** Its reader while lent; what the server sends while it is idle in the pool is dropped. */
  listener: ServerListener | null = null;
  /**
   * The client whose session this is now, made so by a hand-over (pooled-hand-over.ts); null: no
   * client's (fresh, or a hand-over that did not finish). Only the same client gets it without one.
   */
  owner: object | null = null;
  /** The gateway's names of the prepared statements it holds, oldest use first (an LRU). */
  readonly prepared = new Map<string, true>();
  /** When it was last given back (Date.now()): the pool's reaper closes it after the idle time. */
  idleSince = 0;
  /** Cancel requests on their way to its server: it is lent to no one else until they have arrived. */
  cancelling = 0;

  constructor(
    readonly socket: net.Socket,
    readonly parameters: Map<string, string>,
    readonly processId: number,
    readonly secretKey: Buffer,
    /** Bytes the server sent past its first ReadyForQuery (none, normally). */
    readonly rest: Buffer,
  ) {}

  /** Keeps what a ParameterStatus of its server says: a client that logs in on it is told those. */
  noteParameter(raw: Buffer): void {
    const message = parseBackendMessage(raw) as unknown as { parameterName: string; parameterValue: string };
    this.parameters.set(message.parameterName, message.parameterValue);
  }

  /** Marks `name` used now; answers the names evicted to keep at most `max`. */
  touch(name: string, max: number): string[] {
    this.prepared.delete(name);
    this.prepared.set(name, true);
    const evicted: string[] = [];
    for (const oldest of this.prepared.keys()) {
      if (this.prepared.size <= max) break;
      this.prepared.delete(oldest);
      evicted.push(oldest);
    }
    return evicted;
  }
}

/** Opens a server session as the pool's role, logging in with SCRAM from the proven ClientKey. */
export async function openServerConnection(login: PoolLogin, timeoutMs: number): Promise<ServerConnection> {
  const socket = net.connect({ host: login.backend.host, port: login.backend.port, noDelay: true });
  // A server that accepts but never answers (frozen, overloaded) must not hold the pool's room for ever.
  const deadline = setTimeout(() => socket.destroy(new Error(`the server did not complete a login within ${timeoutMs} ms`)), timeoutMs);
  try {
    await once(socket, 'connect');
    socket.write(
      startupMessage(
        [
          ['user', login.role],
          ['database', login.physicalName],
        ],
        PROTOCOL_3_0,
      ),
    );
    const reader = new ByteReader(socket);
    const scram = new ScramClient(login.clientKey, login.verifier);
    const parameters = new Map<string, string>();
    let key: { processId: number; secretKey: Buffer } = { processId: 0, secretKey: Buffer.alloc(0) };
    for (;;) {
      const { raw } = await reader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
      if (raw[0] === BackendType.BackendKeyData) {
        key = readBackendKeyData(raw);
        continue;
      }
      const message = parseBackendMessage(raw) as unknown as { name: string; data?: string; mechanisms?: string[]; parameterName?: string; parameterValue?: string; message?: string; code?: string };
      switch (message.name) {
        case 'authenticationSASL':
          if (!message.mechanisms?.includes(SCRAM_MECHANISM)) throw new Error(`the server offered ${message.mechanisms?.join(', ')}`);
          socket.write(saslInitialResponse(SCRAM_MECHANISM, scram.first()));
          break;
        case 'authenticationSASLContinue':
          socket.write(saslResponse(scram.final(message.data ?? '')));
          break;
        case 'authenticationSASLFinal':
          scram.checkServerFinal(message.data ?? '');
          break;
        case 'authenticationOk':
        case 'notice':
          break;
        case 'parameterStatus':
          parameters.set(message.parameterName!, message.parameterValue!);
          break;
        case 'error':
          throw new Error(`the server refused the pool's login: ${message.code} ${message.message}`);
        case 'readyForQuery':
          return new ServerConnection(socket, parameters, key.processId, key.secretKey, reader.detach());
        default:
          throw new Error(`unexpected ${message.name} while a pool's connection logged in`);
      }
    }
  } catch (error) {
    socket.destroy();
    throw error;
  } finally {
    clearTimeout(deadline);
  }
}
