import { request as httpRequest } from 'node:http';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  /** Sent as JSON unless `raw` is given. */
  json?: unknown;
  /** Sent as is, with `contentType`. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** What a test sends with: fetch, or fetchFrom's stand-in. */
export type Fetch = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; redirect?: 'manual' }) => Promise<Response>;

/**
 * A fetch whose connections leave from `localAddress`, so a test can be a different client on the
 * same machine (any 127.x.y.z is this host's loopback on Linux). Plain http only; never follows a
 * redirect.
 */
export function fetchFrom(localAddress: string): Fetch {
  return (url, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = { ...init.headers };
      if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
      const outgoing = httpRequest(url, { method: init.method ?? 'GET', headers, localAddress }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', reject);
        incoming.on('end', () => {
          const received = new Headers();
          for (let i = 0; i < incoming.rawHeaders.length; i += 2) received.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
          const status = incoming.statusCode ?? 0;
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: received }));
        });
      });
      outgoing.on('error', reject);
      outgoing.end(init.body);
    });
}

/**
 * A small HTTP client for API tests: real requests, parsed JSON, nothing hidden. `from` sends
 * from that local address (fetchFrom).
 */
export function httpClient(baseUrl: string, options: { from?: string } = {}) {
  const send: Fetch = options.from ? fetchFrom(options.from) : fetch;
  return async function request<T = any>(method: string, path: string, init: RequestOptions = {}): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    let body: string | undefined;
    if (init.raw !== undefined) {
      body = init.raw;
      if (init.contentType) headers['content-type'] = init.contentType;
    } else if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers['content-type'] = init.contentType ?? 'application/json';
    }
    const response = await send(`${baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    if (text && (response.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  };
}
