// A cancel request: it arrives on a connection of its own, perhaps at another gateway than the
// session's, and goes to the server whose slot its key carries.
import { once } from 'node:events';
import net from 'node:net';
import { serialize } from 'pg-protocol';
import { backendAtSlot } from './backends.js';
import { backendOfProcessId } from './cancel-keys.js';
import type { ConnectionContext } from './context.js';

export async function forwardCancel(processId: number, secretKey: number, context: ConnectionContext): Promise<void> {
  const { clusterIndex, backendPid } = backendOfProcessId(processId);
  const target = await backendAtSlot(clusterIndex, context.clusters, context.routes);
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
