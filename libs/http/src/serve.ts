import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { SERVER_TLS_POLICY } from '@platform/config';

export interface Serving {
  url: string;
  server: Server;
  /** Stops accepting connections and waits for in-flight requests, up to `drainMs`. */
  close(): Promise<void>;
}

/** What bounds slow and numerous clients (the config's HttpServerLimits). */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

/**
 * Listens with a Koa app, over https when given a certificate and key; `close` drains: idle keep-alive sockets go at once, busy ones finish.
 * A request whose headers or body come too slowly is answered 408 and its connection closed (the
 * server checks every second, not every 30 s as Node would); connections beyond the cap are closed
 * as they arrive.
 */
export async function serve(
  app: Koa,
  options: { host: string; port: number; drainMs?: number; limits: ServerLimits; tls?: { cert: Buffer; key: Buffer } | null },
): Promise<Serving> {
  const { limits, tls } = options;
  const settings = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
  // With a certificate, https only: no plain listener beside it to downgrade to.
  const server: Server = tls
    ? createTlsServer({ ...settings, ...SERVER_TLS_POLICY, cert: tls.cert, key: tls.key }, app.callback())
    : createServer(settings, app.callback());
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `${tls ? 'https' : 'http'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
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
