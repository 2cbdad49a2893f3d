import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionContext } from './context.js';
import { FramingError, MessageScanner } from './frames.js';
import { errorResponse } from './protocol.js';
import type { QueryTracker } from './query-counters.js';
import { ProtocolViolation } from './refusals.js';

/**
 * The session proper: each chunk goes on as it came, with backpressure both ways. The client gets
 * `clientStallMs` to take what the backend sent, and to close its side once the session is over,
 * before the connection is closed; the backend may take its time (a long query is not a stall).
 */
export function relaySession(
  client: Duplex,
  clientRest: Buffer,
  backend: net.Socket,
  backendRest: Buffer,
  tracker: QueryTracker | null,
  context: Pick<ConnectionContext, 'clientStallMs' | 'log'>,
): void {
  const fromClient = tracker ? new MessageScanner((type) => tracker.fromClient(type)) : null;
  const fromServer = tracker ? new MessageScanner((type, status) => tracker.fromServer(type, status)) : null;
  let stall: NodeJS.Timeout | null = null;
  let ending: NodeJS.Timeout | null = null;
  const close = () => {
    if (stall) clearTimeout(stall);
    if (ending) clearTimeout(ending);
    client.destroy();
    backend.destroy();
  };
  /**
   * The session is over: what the backend sent (and `last`) goes out, then the client's side ends.
   * What the client still sends is dropped; it gets the stall time to close its own side, and a
   * client that never does is cut off then rather than hold the socket.
   */
  const endClient = (last?: Buffer) => {
    if (ending) return;
    client.off('data', toBackend);
    client.resume();
    client.end(last);
    ending = setTimeout(close, context.clientStallMs);
  };

  const toBackend = (chunk: Buffer) => {
    try {
      fromClient?.scan(chunk);
    } catch (error) {
      if (!(error instanceof FramingError)) throw error;
      backend.destroy();
      endClient(errorResponse(new ProtocolViolation(error.message).fields));
      return;
    }
    if (!backend.write(chunk)) client.pause();
  };
  const toClient = (chunk: Buffer) => {
    try {
      fromServer?.scan(chunk);
    } catch (error) {
      if (!(error instanceof FramingError)) throw error;
      context.log.warn({ err: error }, 'the backend sent a malformed message; closing the session');
      close();
      return;
    }
    if (!client.write(chunk) && !stall) {
      backend.pause();
      stall = setTimeout(() => {
        context.log.info({ stalledMs: context.clientStallMs }, 'closing a session whose client stopped reading');
        close();
      }, context.clientStallMs);
    }
  };

  backend.on('drain', () => client.resume());
  client.on('drain', () => {
    if (stall) clearTimeout(stall);
    stall = null;
    backend.resume();
  });
  client.on('data', toBackend);
  backend.on('data', toClient);
  client.on('error', close);
  backend.on('error', close);
  client.on('close', close);
  // The backend ends the session (Terminate, a FATAL, a dropped role): what it sent goes out first.
  backend.on('end', () => endClient());
  backend.on('close', () => endClient());

  if (backendRest.length > 0) toClient(backendRest);
  if (clientRest.length > 0) toBackend(clientRest);
  client.resume();
  backend.resume();
}
