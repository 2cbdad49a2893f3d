// A cancel request: it arrives on a connection of its own, perhaps at another gateway than the
// session's (cancel-keys.ts says how its key finds the server).
import { once } from 'node:events';
import net from 'node:net';
import { backendAtSlot, type Backend } from './backends.js';
import { isShortKey, readLongClientKey } from './cancel-keys.js';
import type { ConnectionContext } from './context.js';
import { addressKey } from './login-limits.js';
import { cancelRequest } from './protocol.js';

/**
 * Sends a client's cancel request on to its server: for a session this gateway holds, to its
 * server with the server's key; otherwise a 3.2 key to the server its slot names, with the server's
 * key it carries, and a 3.0 key to the other gateways through the control plane.
 */
export async function forwardCancel(processId: number, secretKey: Buffer, context: ConnectionContext, clientAddress: string | undefined): Promise<void> {
  const held = context.sessionKeys.find(processId, secretKey);
  if (held) return 'cancel' in held ? held.cancel() : sendCancel(held.backend, processId, held.backendKey);
  if (isShortKey(secretKey)) {
    if (context.cancelRelay && context.relayedCancels.take(addressKey(clientAddress))) {
      await context.cancelRelay.publish(processId, secretKey).catch((error: unknown) => context.log.warn({ err: error }, 'passing a cancel request on to the other gateways failed'));
    }
    return;
  }
  const key = readLongClientKey(secretKey);
  if (!key) return;
  const target = await backendAtSlot(key.slot, context.clusters, context.routes);
  if (target) await sendCancel(target, processId, key.backendKey);
}

/** A cancel request another gateway passed on: forwarded if this gateway holds the session. */
export async function cancelFromPeer(processId: number, secretKey: Buffer, context: ConnectionContext): Promise<void> {
  const held = context.sessionKeys.find(processId, secretKey);
  if (held) await ('cancel' in held ? held.cancel() : sendCancel(held.backend, processId, held.backendKey));
}

export async function sendCancel(target: Pick<Backend, 'host' | 'port'>, processId: number, secretKey: Buffer): Promise<void> {
  const backend = net.connect({ host: target.host, port: target.port });
  try {
    await once(backend, 'connect');
    backend.end(cancelRequest(processId, secretKey));
    await once(backend, 'close');
  } catch {
    // As PostgreSQL does, a cancel that cannot be delivered is dropped without a word.
  } finally {
    backend.destroy();
  }
}
