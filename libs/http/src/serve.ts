import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface Serving {
  url: string;
  server: Server;
  /** Stops accepting connections and waits for in-flight requests, up to `drainMs`. */
  close(): Promise<void>;
}

/** Listens with a Koa app; `close` drains: idle keep-alive sockets go at once, busy ones finish. */
export async function serve(app: Koa, options: { host: string; port: number; drainMs?: number }): Promise<Serving> {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  let closing: Promise<void> | null = null;
  return {
    url,
    server,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), options.drainMs ?? 10_000);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      })),
  };
}
