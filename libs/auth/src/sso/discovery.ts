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

/** What the platform needs of a provider's discovery document (OpenID Connect Discovery 1.0). */
export interface OidcDiscovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  [field: string]: unknown;
}

const WELL_KNOWN = '/.well-known/openid-configuration';
/** ID token algorithms the relying party verifies. */
export const ACCEPTED_ID_TOKEN_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

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
    const reason = refusedAddress(address, { allowLoopback: options.allowLoopbackHttp });
    if (reason) throw new DiscoveryError('refused_url', `${host}: ${reason}`);
  }
  if (url.protocol === 'http:' && !allLoopback(addresses)) throw new DiscoveryError('refused_url', 'the URL must be https');
  return { url, address: addresses[0] };
}

interface Answer {
  status: number;
  location: string | null;
  body: Buffer;
}

function fetchOnce(url: URL, address: string, options: DiscoveryFetchOptions): Promise<Answer> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 100_000;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        // Connect to the address that was checked, whatever the name resolves to by now.
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
            request.destroy();
            reject(new DiscoveryError('mismatch', `the discovery document is over ${maxBytes} bytes`));
          } else {
            chunks.push(chunk);
          }
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, location: response.headers.location ?? null, body: Buffer.concat(chunks) }));
        response.on('error', (error) => reject(new DiscoveryError('unreachable', `reading ${url.origin}: ${error.message}`)));
      },
    );
    const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('close', () => clearTimeout(deadline));
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => reject(error instanceof DiscoveryError ? error : new DiscoveryError('unreachable', `fetching ${url.origin}: ${error.message}`)));
    request.end();
  });
}

/** The issuer a discovery URL belongs to: the URL without `/.well-known/openid-configuration`. */
export function issuerOf(configUrl: string): string {
  return configUrl.endsWith(WELL_KNOWN) ? configUrl.slice(0, -WELL_KNOWN.length) : configUrl;
}

/**
 * Fetches and checks a provider's discovery document. Every URL on the way (redirects too, at
 * most `maxRedirects`) is vetted before it is fetched; the answer must be 200 JSON within the size
 * and time limits, name the issuer the URL belongs to, the authorization, token and JWKS
 * endpoints (https, unless loopback is allowed), the code flow and an ID token algorithm we verify.
 */
export async function fetchDiscovery(configUrl: string, options: DiscoveryFetchOptions): Promise<OidcDiscovery> {
  let next = configUrl;
  let answer: Answer | undefined;
  for (let hop = 0; hop <= (options.maxRedirects ?? 3); hop++) {
    const { url, address } = await vetUrl(next, options);
    answer = await fetchOnce(url, address, options);
    if (answer.status < 300 || answer.status >= 400 || !answer.location) break;
    next = new URL(answer.location, url).href;
    answer = undefined;
  }
  if (!answer) throw new DiscoveryError('unreachable', 'too many redirects');
  if (answer.status !== 200) throw new DiscoveryError('unreachable', `the discovery document answered ${answer.status}`);
  let document: Record<string, unknown>;
  try {
    document = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new DiscoveryError('mismatch', 'the discovery document is not JSON');
  }
  return checkDiscovery(document, issuerOf(configUrl), options);
}

/** The document as the platform needs it, or DiscoveryError('mismatch') saying what is wrong. */
export function checkDiscovery(document: Record<string, unknown>, issuer: string, options: Pick<DiscoveryFetchOptions, 'allowLoopbackHttp'>): OidcDiscovery {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new DiscoveryError('mismatch', 'the discovery document is not an object');
  if (document.issuer !== issuer) throw new DiscoveryError('mismatch', `the discovery document names issuer '${String(document.issuer)}', not '${issuer}'`);
  for (const field of ['authorization_endpoint', 'token_endpoint', 'jwks_uri']) {
    const value = document[field];
    let url: URL | null = null;
    try {
      url = typeof value === 'string' ? new URL(value) : null;
    } catch {
      url = null;
    }
    if (!url || !(url.protocol === 'https:' || (options.allowLoopbackHttp && url.protocol === 'http:'))) {
      throw new DiscoveryError('mismatch', `the discovery document has no https ${field}`);
    }
  }
  const responseTypes = document.response_types_supported;
  if (!Array.isArray(responseTypes) || !responseTypes.includes('code')) throw new DiscoveryError('mismatch', 'the provider does not support the code flow');
  const algorithms = document.id_token_signing_alg_values_supported;
  if (!Array.isArray(algorithms) || !algorithms.some((alg) => ACCEPTED_ID_TOKEN_ALGORITHMS.includes(alg as string))) {
    throw new DiscoveryError('mismatch', `the provider signs ID tokens with none of ${ACCEPTED_ID_TOKEN_ALGORITHMS.join(', ')}`);
  }
  const challenges = document.code_challenge_methods_supported;
  if (Array.isArray(challenges) && !challenges.includes('S256')) throw new DiscoveryError('mismatch', 'the provider does not support PKCE S256');
  return document as OidcDiscovery;
}
