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

/**
 * An app's `main`: loads config (a configuration error exits 78 with the message, which names
 * the variable), starts, and on SIGINT, SIGTERM or the loss of a parent that started it over IPC
 * (`npm start`) stops gracefully.
 */
export async function runService<C>(
  name: string,
  load: () => C,
  start: (config: C) => Promise<{ close(): Promise<void> }>,
  isConfigError: (error: unknown) => boolean,
): Promise<void> {
  let config: C;
  try {
    config = load();
  } catch (error) {
    if (!isConfigError(error)) throw error;
    console.error(`${name}: configuration error: ${(error as Error).message}`);
    process.exit(78);
  }
  const service = await start(config);
  const stop = () =>
    service.close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stop);
  if (process.send) process.once('disconnect', stop);
}
