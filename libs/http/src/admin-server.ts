import { createHash, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { ApiErrorBody } from './api-error.js';

export interface AdminServerOptions {
  host: string;
  port: number;
  /** Wanted as `Authorization: Bearer <token>` by `/metrics`; null leaves it open. */
  token: string | null;
  /** The `realm` of the 401's `WWW-Authenticate` challenge. */
  realm: string;
  /** Whether what the service needs answers (`/readyz`). */
  isReady: () => Promise<boolean>;
  /** Whether the service can serve at all (`/healthz` 503 when not); always, unless given. */
  isAlive?: () => boolean;
  /** Prometheus text exposition (`/metrics`). */
  metrics: () => string | Promise<string>;
}

export interface AdminServer {
  url: string;
  /** Stops listening and drops the connections left (probes and scrapers hold nothing worth draining). */
  close(): Promise<void>;
}

interface AdminAnswer {
  status: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
}

/**
 * A service's operator endpoints on a listener of their own, apart from what customers reach:
 * `/healthz`, `/readyz` and `/metrics`. Health says nothing about customers and stays open for
 * load balancers' probes; the metrics may name customers' resources, so they want the token.
 */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const isAuthorized = adminTokenCheck(options.token);
  const server = http.createServer((request, response) => {
    void answerAdmin(request.url ?? '/', isAuthorized(request.headers.authorization), options).then(({ status, type, body, headers }) => {
      response.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
      response.end(body);
    });
  });
  server.listen(options.port, options.host);
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
    },
  };
}

/**
 * Whether an Authorization header carries the admin token; without a token every request may read.
 * Both sides are hashed first so the comparison takes the same time whatever the header's length.
 */
function adminTokenCheck(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null) return () => true;
  const expected = createHash('sha256').update(`Bearer ${token}`).digest();
  return (authorization) => authorization !== undefined && timingSafeEqual(createHash('sha256').update(authorization).digest(), expected);
}

function json(status: number, body: object, headers?: Record<string, string>): AdminAnswer {
  return { status, type: 'application/json', body: JSON.stringify(body), headers };
}

function apiError(body: ApiErrorBody, headers?: Record<string, string>): AdminAnswer {
  return json(body.statusCode, body, headers);
}

async function answerAdmin(url: string, authorized: boolean, options: AdminServerOptions): Promise<AdminAnswer> {
  const path = url.split('?')[0];
  if (path === '/healthz') return options.isAlive?.() === false ? json(503, { status: 'not serving' }) : json(200, { status: 'ok' });
  if (path === '/readyz') {
    const ready = await options.isReady();
    return json(ready ? 200 : 503, { status: ready ? 'ok' : 'control plane unreachable' });
  }
  if (path === '/metrics') {
    if (!authorized) {
      return apiError(
        { errorCode: 'unauthenticated', message: 'The metrics want the admin token (Authorization: Bearer ...).', statusCode: 401 },
        { 'WWW-Authenticate': `Bearer realm="${options.realm}"` },
      );
    }
    try {
      return { status: 200, type: 'text/plain; version=0.0.4', body: await options.metrics() };
    } catch (error) {
      // A gateway's workers answer for their own counters: a sum without one of them would be wrong, not partial.
      return apiError({ errorCode: 'metrics_unavailable', message: `The metrics could not be gathered: ${(error as Error).message}`, statusCode: 503 });
    }
  }
  return apiError({ errorCode: 'not_found', message: `No such path: ${path}`, statusCode: 404 });
}
