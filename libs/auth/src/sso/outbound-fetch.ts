import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { allLoopback, refusedAddress } from './outbound-address.js';

/** Why a discovery document could not be had: the URL is not allowed (400), or the provider failed us (502). */
export class DiscoveryError extends Error {
  constructor(
    readonly kind: 'refused_url' | 'unreachable' | 'mismatch',
    message: string,
  ) {
    super(message);
    this.name = 'DiscoveryError';
  }
}

export interface DiscoveryFetchOptions {
  /** Development only: plain http, and addresses of this machine, are allowed (a provider on loopback). */
  allowLoopbackHttp: boolean;
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  /** Name resolution; the system's by default (tests pass their own). */
  lookup?: (host: string) => Promise<string[]>;
  /** Extra trusted certificate authorities (tests). */
  ca?: string;
}

/**
 * The refusal of an address inward, in words that name no address: echoing what a name resolved
 * to would let anyone who may register a provider map the inside of the network, name by name.
 * One sentence for this machine and private networks alike, so the answer tells which of the two
 * a name points to no more than which address.
 */
export const INWARD_ADDRESS = "the provider's address is on this machine or a private network";

/**
 * What went wrong with a connection, without the error's own message: Node's network errors name
 * the address they connected to (`connect ECONNREFUSED 10.0.0.5:443`), which is what a name resolved to.
 */
function connectionFailure(error: Error & { code?: string }): string {
  const code = error.code ?? '';
  if (code === 'ECONNREFUSED') return 'the connection was refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'the connection was reset';
  if (code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT') return 'the connection timed out';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'the address cannot be reached';
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code) || code === 'HOSTNAME_MISMATCH') return 'the TLS handshake failed (its certificate was not accepted)';
  if (/^no answer within \d+ ms$/.test(error.message)) return error.message;
  return 'the connection failed';
}

async function systemLookup(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

/**
 * Checks a URL before anything is fetched from it: https (plain http only to loopback, and only
 * when allowed), no credentials in it, and a host whose every address may be reached. Answers the
 * URL and the address to connect to, so the fetch cannot be steered elsewhere by a second lookup.
 */
export async function vetUrl(text: string, options: DiscoveryFetchOptions): Promise<{ url: URL; address: string }> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DiscoveryError('refused_url', `'${text}' is not a URL`);
  }
  if (url.username || url.password) throw new DiscoveryError('refused_url', 'the URL must not carry credentials');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowLoopbackHttp)) {
    throw new DiscoveryError('refused_url', 'the URL must be https');
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await (options.lookup ?? systemLookup)(host);
  } catch {
    throw new DiscoveryError('unreachable', `${host} does not resolve`);
  }
  if (addresses.length === 0) throw new DiscoveryError('unreachable', `${host} does not resolve`);
  for (const address of addresses) {
    if (refusedAddress(address, { allowLoopback: options.allowLoopbackHttp })) throw new DiscoveryError('refused_url', INWARD_ADDRESS);
  }
  if (url.protocol === 'http:' && !allLoopback(addresses)) throw new DiscoveryError('refused_url', 'the URL must be https');
  return { url, address: addresses[0] };
}


export interface OutboundAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  location: string | null;
  body: Buffer;
}

export interface OutboundRequest {
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/**
 * One HTTP exchange with a provider, connected to `address` (the one that was vetted) whatever the
 * name resolves to by now, within the time and size limits. Redirects are answered, not followed.
 */
export function fetchOnce(url: URL, address: string, request: OutboundRequest, options: DiscoveryFetchOptions): Promise<OutboundAnswer> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 100_000;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const outgoing = client.request(
      url,
      {
        method: request.method,
        headers: request.headers,
        lookup: (_host, lookupOptions, callback) => {
          const family = isIP(address);
          if (lookupOptions.all) (callback as (error: null, addresses: { address: string; family: number }[]) => void)(null, [{ address, family }]);
          else (callback as (error: null, address: string, family: number) => void)(null, address, family);
        },
        servername: isIP(url.hostname) ? undefined : url.hostname,
        ca: options.ca,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            outgoing.destroy();
            reject(new DiscoveryError('mismatch', `${url.origin} answered over ${maxBytes} bytes`));
          } else {
            chunks.push(chunk);
          }
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, location: response.headers.location ?? null, body: Buffer.concat(chunks) }),
        );
        response.on('error', (error) => reject(new DiscoveryError('unreachable', `reading ${url.origin}: ${connectionFailure(error)}`)));
      },
    );
    const deadline = setTimeout(() => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    outgoing.on('close', () => clearTimeout(deadline));
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', (error) => reject(error instanceof DiscoveryError ? error : new DiscoveryError('unreachable', `fetching ${url.origin}: ${connectionFailure(error)}`)));
    outgoing.end(request.body);
  });
}

/**
 * A `fetch` for openid-client that reaches providers the way discovery does: every URL vetted
 * (https, no internal addresses) and connected to the vetted address, with time and size limits,
 * redirects not followed. The token endpoint and the JWKS come from the provider's document, so
 * they are held to the same rules as the document's own URL.
 */
export function vettedFetch(options: DiscoveryFetchOptions) {
  return async (input: string, init: { method?: string; headers?: Record<string, string> | Headers; body?: unknown }): Promise<Response> => {
    const { url, address } = await vetUrl(input, options);
    const headers: Record<string, string> = {};
    new Headers(init.headers as ConstructorParameters<typeof Headers>[0]).forEach((value, name) => (headers[name] = value));
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const answer = await fetchOnce(url, address, { method: init.method ?? 'GET', headers, body }, options);
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const each of Array.isArray(value) ? value : [value]) responseHeaders.append(name, each);
    }
    const status = answer.status;
    const response = new Response(status === 204 || status === 304 ? null : new Uint8Array(answer.body), { status, headers: responseHeaders });
    // openid-client checks where an answer came from.
    Object.defineProperty(response, 'url', { value: url.href });
    return response;
  };
}
