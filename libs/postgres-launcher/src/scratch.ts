import { chmodSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A free TCP port on loopback, below Linux's ephemeral range (32768 and up by default). A port the
 * kernel picks comes from that range, where any outgoing connection may take it as its local port
 * before the caller listens on it (EADDRINUSE: seen in a CI run while npm start opened its own
 * connections). Falls back to the kernel's choice if no port of the lower range is free.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOW_PORTS.first + Math.floor(Math.random() * (LOW_PORTS.last - LOW_PORTS.first + 1));
    if (await isPortFree(port)) return port;
  }
  return kernelPort();
}

/** Above the well-known services' ports on our machines (the highest, 6379), below the ephemeral range. */
const LOW_PORTS = { first: 20_000, last: 32_767 };

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A new temporary folder that the `postgres` user can enter (the server runs as it under root). */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}
