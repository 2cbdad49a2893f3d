import { isStorableText } from './storable-text.js';
import { DiscoveryError, fetchOnce, INWARD_ADDRESS, vetUrl, type DiscoveryFetchOptions, type OutboundAnswer } from './outbound-fetch.js';

export { DiscoveryError, vetUrl, type DiscoveryFetchOptions } from './outbound-fetch.js';

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

/** Whether every string in the value (keys too) is well-formed Unicode without NUL, as PostgreSQL's jsonb requires. */
function storableText(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return isStorableText(value);
  if (typeof value !== 'object' || value === null) return true;
  if (depth > 32) return false;
  return Object.entries(value).every(([key, item]) => storableText(key) && storableText(item, depth + 1));
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
  let answer: OutboundAnswer | undefined;
  for (let hop = 0; hop <= (options.maxRedirects ?? 3); hop++) {
    const { url, address } = await vetRedirect(next, hop, options);
    answer = await fetchOnce(url, address, { method: 'GET', headers: { accept: 'application/json' } }, options);
    if (answer.status < 300 || answer.status >= 400 || !answer.location) break;
    try {
      next = new URL(answer.location, url).href;
    } catch {
      throw new DiscoveryError('unreachable', 'the provider redirected to something that is not a URL');
    }
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
  const discovery = checkDiscovery(document, issuerOf(configUrl), options);
  await vetEndpoints(discovery, options);
  return discovery;
}

/** `vetUrl`, saying so when it was the provider's redirect, not the caller's URL, that was refused. */
async function vetRedirect(next: string, hop: number, options: DiscoveryFetchOptions): ReturnType<typeof vetUrl> {
  try {
    return await vetUrl(next, options);
  } catch (error) {
    if (hop === 0 || !(error instanceof DiscoveryError) || error.kind !== 'refused_url') throw error;
    const reason = error.message === INWARD_ADDRESS ? 'an address on this machine or a private network' : `a URL that is refused (${error.message})`;
    throw new DiscoveryError('refused_url', `the provider redirected to ${reason}`);
  }
}

/**
 * The endpoints the relying party will call are held to the rules the document's own URL was: a
 * provider's document must not point the token request or the key fetch inward. (Each request is
 * vetted again when it is made: a name may resolve elsewhere by then.)
 */
async function vetEndpoints(discovery: OidcDiscovery, options: DiscoveryFetchOptions): Promise<void> {
  for (const field of ['token_endpoint', 'jwks_uri'] as const) {
    try {
      await vetUrl(discovery[field], options);
    } catch (error) {
      if (error instanceof DiscoveryError && error.kind === 'refused_url') throw new DiscoveryError('mismatch', `${field} refused: ${error.message}`);
      throw error;
    }
  }
}

/** The document as the platform needs it, or DiscoveryError('mismatch') saying what is wrong. */
export function checkDiscovery(document: Record<string, unknown>, issuer: string, options: Pick<DiscoveryFetchOptions, 'allowLoopbackHttp'>): OidcDiscovery {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new DiscoveryError('mismatch', 'the discovery document is not an object');
  if (!storableText(document)) throw new DiscoveryError('mismatch', 'the discovery document holds text that is not well-formed (NUL, or a lone surrogate)');
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
