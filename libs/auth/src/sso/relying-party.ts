import * as oidc from 'openid-client';
import {
  BadGatewayError,
  UnauthenticatedError,
  ValidationError,
  type AuthorizationStart,
  type OidcIdentity,
  type OidcRelyingParty,
  type ProviderMetadata,
} from '@platform/domain';
import { ACCEPTED_ID_TOKEN_ALGORITHMS, fetchDiscovery } from './discovery.js';
import { DiscoveryError, vettedFetch, type DiscoveryFetchOptions } from './outbound-fetch.js';
import { isStorableText } from './storable-text.js';

/** What a sign-in asks the provider for: who the user is, their email and their name. */
const SCOPE = 'openid email profile';
/** JWKS kept per provider between sign-ins; past this many providers the cache starts over. */
const MAX_CACHED_KEY_SETS = 1_000;

/** A discovery failure as the API answers it: a URL we refuse is the caller's 400, a provider that fails us a 502. */
function discoveryFailure(error: DiscoveryError): Error {
  if (error.kind === 'refused_url') return new ValidationError('invalid_config_url', `configUrl refused: ${error.message}`);
  const code = error.kind === 'mismatch' ? 'provider_mismatch' : 'provider_config_error';
  return new BadGatewayError(code, `The provider's discovery document could not be used: ${error.message}`, { cause: error });
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && chain.length < 10; current = (current as { cause?: unknown }).cause) {
    chain.push(current);
    if (typeof current !== 'object' || current === null) break;
  }
  return chain;
}

/**
 * A failed code exchange: the provider out of reach or failing (5xx) is a 502; anything else (a
 * refused code, an ID token that does not hold) means this sign-in is not proven: 401.
 */
function exchangeFailure(error: unknown): Error {
  const chain = causes(error);
  const outbound = chain.find((each): each is DiscoveryError => each instanceof DiscoveryError);
  if (outbound) return new BadGatewayError('provider_config_error', `The provider could not be reached: ${outbound.message}`, { cause: error });
  const status = chain.map((each) => (each as { status?: unknown }).status).find((value): value is number => typeof value === 'number');
  if (status !== undefined && status >= 500) return new BadGatewayError('provider_config_error', `The provider's token endpoint failed (${status})`, { cause: error });
  const message = error instanceof Error ? error.message : 'the provider’s answer was refused';
  return new UnauthenticatedError('oidc_authentication_failed', `Single sign-on failed: ${message}`);
}

/** RS256 where the provider offers it (the OpenID Connect default), else the first it offers that we verify. */
function idTokenAlgorithm(metadata: ProviderMetadata): string {
  const offered = metadata.id_token_signing_alg_values_supported;
  const algorithms = Array.isArray(offered) ? offered : [];
  return algorithms.includes('RS256') ? 'RS256' : (ACCEPTED_ID_TOKEN_ALGORITHMS.find((alg) => algorithms.includes(alg)) ?? 'RS256');
}

function pictureUrl(value: unknown): string | null {
  const candidate = text(value, 2_000);
  return candidate !== null && /^https:\/\/[^/]/i.test(candidate) ? candidate : null;
}

/** A claim as text the platform can store: a string of 1 to `max` characters, well-formed Unicode, no NUL. */
function text(value: unknown, max = 500): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= max && isStorableText(value) ? value : null;
}

/**
 * The OpenID Connect relying party, on openid-client: authorization code flow with PKCE S256,
 * state and nonce; ID tokens validated by the library (issuer, audience, nonce, expiry, signature,
 * RFC 9207 `iss`). Every request to a provider goes through `vettedFetch`.
 */
export class OpenIdRelyingParty implements OidcRelyingParty {
  private readonly fetch: ReturnType<typeof vettedFetch>;
  private readonly keySets = new Map<string, oidc.ExportedJWKSCache>();

  constructor(private readonly options: DiscoveryFetchOptions) {
    this.fetch = vettedFetch(options);
  }

  async discover(configUrl: string): Promise<ProviderMetadata> {
    try {
      return await fetchDiscovery(configUrl, this.options);
    } catch (error) {
      if (error instanceof DiscoveryError) throw discoveryFailure(error);
      throw error;
    }
  }

  private configuration(metadata: ProviderMetadata, clientId: string, clientSecret?: string): oidc.Configuration {
    const methods = metadata.token_endpoint_auth_methods_supported;
    // client_secret_basic is the default a provider that lists nothing supports.
    const post = Array.isArray(methods) && methods.includes('client_secret_post') && !methods.includes('client_secret_basic');
    const authentication = clientSecret === undefined ? oidc.None() : post ? oidc.ClientSecretPost(clientSecret) : oidc.ClientSecretBasic(clientSecret);
    const config = new oidc.Configuration(metadata as oidc.ServerMetadata, clientId, { id_token_signed_response_alg: idTokenAlgorithm(metadata) }, authentication);
    config[oidc.customFetch] = this.fetch as unknown as oidc.CustomFetch;
    config.timeout = Math.ceil((this.options.timeoutMs ?? 5_000) / 1000);
    if (this.options.allowLoopbackHttp) oidc.allowInsecureRequests(config);
    const keys = this.keySets.get(metadata.jwks_uri);
    if (keys) oidc.setJwksCache(config, keys);
    return config;
  }

  async begin(input: Parameters<OidcRelyingParty['begin']>[0]): Promise<AuthorizationStart> {
    const config = this.configuration(input.metadata, input.clientId);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: input.callbackUrl,
      response_type: 'code',
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      ...(input.reauthenticate ? { prompt: 'login' } : {}),
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  async finish(input: Parameters<OidcRelyingParty['finish']>[0]): Promise<OidcIdentity> {
    const config = this.configuration(input.metadata, input.clientId, input.clientSecret);
    // openid-client trusts an ID token from the token endpoint on TLS alone unless told otherwise:
    // check its signature against the provider's JWKS as well.
    oidc.enableNonRepudiationChecks(config);
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, input.responseUrl, {
        pkceCodeVerifier: input.codeVerifier,
        expectedState: input.state,
        expectedNonce: input.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      throw exchangeFailure(error);
    } finally {
      this.keepKeys(input.metadata.jwks_uri, config);
    }
    if (!claims) throw new UnauthenticatedError('oidc_authentication_failed', 'Single sign-on failed: the provider sent no ID token');
    const subject = text(claims.sub, 255);
    if (subject === null || text(claims.iss, 2_000) === null) {
      throw new UnauthenticatedError('oidc_authentication_failed', 'Single sign-on failed: the ID token’s subject or issuer is not usable text');
    }
    return {
      issuer: claims.iss,
      subject,
      email: text(claims.email, 320),
      emailVerified: claims.email_verified === true || claims.email_verified === 'true',
      name: text(claims.name),
      givenName: text(claims.given_name),
      familyName: text(claims.family_name),
      picture: pictureUrl(claims.picture),
    };
  }

  private keepKeys(jwksUri: string, config: oidc.Configuration): void {
    const keys = oidc.getJwksCache(config);
    if (!keys) return;
    if (this.keySets.size >= MAX_CACHED_KEY_SETS && !this.keySets.has(jwksUri)) this.keySets.clear();
    this.keySets.set(jwksUri, keys);
  }
}
