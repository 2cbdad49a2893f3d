import { randomUUID, sign } from 'node:crypto';
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import {
  UnauthenticatedError,
  type AccessTokenClaims,
  type AccessTokens,
  type Clock,
  type Principal,
  type RevocationList,
  type TokenVerifier,
  type UserTokenIssuer,
} from '@platform/domain';
import { SIGNING_ALG, type KeySet } from './key-set.js';

/** The token's `typ` header (RFC 9068) and the claim that says whose token it is. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
export const DEVELOPER_TOKEN_KIND = 'developer';
export const USER_TOKEN_KIND = 'user';
export const CLIENT_TOKEN_KIND = 'client';
/** SPEC: user tokens live 3600 s (`maxAge`). */
export const USER_TOKEN_MAX_AGE = 3600;

/**
 * The longest a token signed with the platform's keys lives (a developer's or a client's, which
 * live DEVELOPER_TOKEN_TTL, or a user's): how long a retired key must go on verifying.
 */
export function maxSignedTokenSeconds(developerTokenTtlSeconds: number): number {
  return Math.max(developerTokenTtlSeconds, USER_TOKEN_MAX_AGE);
}

export interface TokenSettings {
  /** `iss`: the token service's public URL. */
  issuer: string;
  /** `aud`: the management API's public base URL. */
  audience: string;
}

export interface IssuedToken {
  token: string;
  expiresIn: number;
  expiresAt: Date;
}

function base64urlJson(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * Signs an RFC 9068 access token with the current key of the set: the one place tokens are made.
 * A compact JWS (RFC 7515) signed with node:crypto rather than jose's SignJWT: on the token
 * endpoint's hot path that costs a third less CPU (measured in tools/bench/token-endpoint.ts);
 * every verifier, ours included, is jose.
 */
async function signAccessToken(
  keys: KeySet,
  settings: TokenSettings & { clock: Clock },
  input: { subject: string; claims: Record<string, unknown>; ttlSeconds: number },
): Promise<IssuedToken> {
  const { kid, privateKey } = await keys.signingKey();
  const issuedAt = Math.floor(settings.clock.now().getTime() / 1000);
  const expires = issuedAt + input.ttlSeconds;
  const header = base64urlJson({ alg: SIGNING_ALG, kid, typ: ACCESS_TOKEN_TYPE });
  const payload = base64urlJson({
    ...input.claims,
    iss: settings.issuer,
    aud: settings.audience,
    sub: input.subject,
    iat: issuedAt,
    exp: expires,
    jti: randomUUID(),
  });
  const signingInput = `${header}.${payload}`;
  // ES256 signatures are the raw r || s pair (RFC 7518 section 3.4), not DER. With a callback
  // the signing runs on libuv's thread pool, off the event loop, so requests overlap it.
  const signature = await new Promise<Buffer>((resolve, reject) =>
    sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' }, (error, result) => (error ? reject(error) : resolve(result))),
  );
  return { token: `${signingInput}.${signature.toString('base64url')}`, expiresIn: input.ttlSeconds, expiresAt: new Date(expires * 1000) };
}

/**
 * Signs a developer access token (RFC 9068 claims) with the current key of the set. `ws` binds
 * it to one workspace (a workspace's own client); `sid` names its refresh-token family.
 */
export function issueDeveloperToken(
  keys: KeySet,
  settings: TokenSettings & { clock: Clock },
  input: {
    developerId: string;
    clientId: string;
    scopes: readonly string[];
    ttlSeconds: number;
    workspaceId?: string | null;
    familyId?: string;
  },
): Promise<IssuedToken> {
  return signAccessToken(keys, settings, {
    subject: input.developerId,
    claims: {
      client_id: input.clientId,
      scope: input.scopes.join(' '),
      kind: DEVELOPER_TOKEN_KIND,
      ...(input.workspaceId ? { ws: input.workspaceId } : {}),
      ...(input.familyId ? { sid: input.familyId } : {}),
    },
    ttlSeconds: input.ttlSeconds,
  });
}

/** Signs a client's access token (client_credentials): `sub` = `client_id`, `ws` = its workspace. */
export function issueClientToken(
  keys: KeySet,
  settings: TokenSettings & { clock: Clock },
  input: { clientId: string; workspaceId: string; scopes: readonly string[]; ttlSeconds: number },
): Promise<IssuedToken> {
  return signAccessToken(keys, settings, {
    subject: input.clientId,
    claims: { client_id: input.clientId, scope: input.scopes.join(' '), kind: CLIENT_TOKEN_KIND, ws: input.workspaceId },
    ttlSeconds: input.ttlSeconds,
  });
}

/** Signs user access tokens for one platform database, bound to a server-side session. */
export class JwtUserTokenIssuer implements UserTokenIssuer {
  constructor(
    private readonly keys: KeySet,
    /** `aud` of user tokens: the {api_url}. */
    private readonly settings: TokenSettings & { clock: Clock; maxAge?: number },
  ) {}

  async issue(input: { userId: string; databaseId: string; sessionId: string }): Promise<{ jwt: string; maxAge: number }> {
    const maxAge = this.settings.maxAge ?? USER_TOKEN_MAX_AGE;
    const { token } = await signAccessToken(this.keys, this.settings, {
      subject: input.userId,
      claims: { kind: USER_TOKEN_KIND, db: input.databaseId, sid: input.sessionId },
      ttlSeconds: maxAge,
    });
    return { jwt: token, maxAge };
  }
}

export interface VerifierSettings {
  issuer: string;
  /** `aud` of developer tokens: the {base_url}. */
  audience: string;
  /** `aud` of user tokens: the {api_url}; the same as `audience` unless configured apart. */
  userAudience?: string;
  clock: Clock;
  clockToleranceSeconds?: number;
  /** Verified tokens remembered (until they expire) so a hot path verifies a signature once. */
  cacheSize?: number;
  /** Refresh-token families revoked lately: their developer tokens stop working. */
  revocations?: RevocationList;
}

/**
 * Verifies bearer tokens locally: signature by a key of the set (ES256 only, so `alg: none` and
 * algorithm confusion fail), `typ`, issuer, audience for the token's kind, expiry. Every failure
 * reads the same to the client. A verified token is cached until its expiry; what can end it
 * sooner (a revoked session, a removed membership) is checked by the query that serves the request.
 */
export class JwtTokenVerifier implements TokenVerifier {
  private readonly cache = new Map<string, { principal: Principal; expires: number; kid: string }>();

  constructor(
    private readonly keys: KeySet,
    private readonly settings: VerifierSettings,
  ) {}

  async verify(token: string): Promise<Principal> {
    const now = this.settings.clock.now().getTime();
    const hit = this.cache.get(token);
    if (hit) {
      if (hit.expires > now && this.keys.stillVerifies(hit.kid)) return this.unlessRevoked(hit.principal);
      this.cache.delete(token);
    }
    const { principal, expires, kid } = await this.verifyUncached(token);
    this.unlessRevoked(principal);
    if (this.cache.size >= (this.settings.cacheSize ?? 10_000)) this.cache.clear();
    this.cache.set(token, { principal, expires, kid });
    return principal;
  }

  private unlessRevoked(principal: Principal): Principal {
    if (principal.kind === 'developer' && principal.familyId && this.settings.revocations?.isRevoked(principal.familyId)) {
      throw invalidToken();
    }
    return principal;
  }

  private async verifyUncached(token: string): Promise<{ principal: Principal; expires: number; kid: string }> {
    const userAudience = this.settings.userAudience ?? this.settings.audience;
    const verified = await verifiedPayload(this.keys, token, {
      ...this.settings,
      audience: [this.settings.audience, userAudience],
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    if (!verified) throw invalidToken();
    const { payload, kid } = verified;
    const sub = payload.sub as string;
    const audiences = ([] as string[]).concat(payload.aud ?? []);
    const expires = (payload.exp as number) * 1000;
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    if (payload.kind === DEVELOPER_TOKEN_KIND && audiences.includes(this.settings.audience)) {
      const principal: Principal = {
        kind: 'developer',
        developerId: sub,
        scopes,
        ...(typeof payload.ws === 'string' ? { workspaceId: payload.ws } : {}),
        ...(typeof payload.sid === 'string' ? { familyId: payload.sid } : {}),
      };
      return { principal, expires, kid };
    }
    if (payload.kind === CLIENT_TOKEN_KIND && audiences.includes(this.settings.audience) && typeof payload.ws === 'string') {
      return { principal: { kind: 'client', clientId: sub, workspaceId: payload.ws, scopes }, expires, kid };
    }
    if (payload.kind === USER_TOKEN_KIND && audiences.includes(userAudience) && typeof payload.db === 'string' && typeof payload.sid === 'string') {
      return { principal: { kind: 'user', userId: sub, databaseId: payload.db, sessionId: payload.sid }, expires, kid };
    }
    throw invalidToken();
  }
}

function invalidToken(): UnauthenticatedError {
  return new UnauthenticatedError('invalid_token', 'The access token is missing, invalid or expired');
}

/**
 * The payload of a token signed by a key of the set: ES256 only (so `alg: none` and algorithm
 * confusion fail), `typ: at+jwt`, the issuer, the audience when given, expiry. Null for anything
 * else, including input that is not a JWT at all.
 */
async function verifiedPayload(
  keys: KeySet,
  token: string,
  options: { issuer: string; audience?: string[]; clock: Clock; clockToleranceSeconds?: number; requiredClaims: string[] },
): Promise<{ payload: JWTPayload; kid: string } | null> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    // jose throws a plain TypeError for what is not a JWS.
    return null;
  }
  const key = kid ? await keys.verificationKey(kid) : null;
  if (!kid || !key) return null;
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: [SIGNING_ALG],
      issuer: options.issuer,
      audience: options.audience,
      typ: ACCESS_TOKEN_TYPE,
      currentDate: options.clock.now(),
      clockTolerance: options.clockToleranceSeconds ?? 5,
      requiredClaims: options.requiredClaims,
    });
    return typeof payload.sub === 'string' ? { payload, kid } : null;
  } catch (error) {
    if (error instanceof errors.JOSEError) return null;
    throw error;
  }
}

/**
 * The token service's access tokens: developer tokens from the authorization_code and
 * refresh_token grants, client tokens from client_credentials, and reading either back (for
 * revocation and introspection).
 */
export class JwtAccessTokens implements AccessTokens {
  constructor(
    private readonly keys: KeySet,
    private readonly settings: TokenSettings & { clock: Clock; ttlSeconds: number },
  ) {}

  async issueForDeveloper(input: {
    developerId: string;
    clientId: string;
    scopes: readonly string[];
    workspaceId: string | null;
    familyId: string;
  }): Promise<{ token: string; expiresIn: number }> {
    const issued = await issueDeveloperToken(this.keys, this.settings, { ...input, ttlSeconds: this.settings.ttlSeconds });
    return { token: issued.token, expiresIn: issued.expiresIn };
  }

  async issueForClient(input: { clientId: string; workspaceId: string; scopes: readonly string[] }): Promise<{ token: string; expiresIn: number }> {
    const issued = await issueClientToken(this.keys, this.settings, { ...input, ttlSeconds: this.settings.ttlSeconds });
    return { token: issued.token, expiresIn: issued.expiresIn };
  }

  async read(token: string): Promise<AccessTokenClaims | null> {
    if (token.length > 8192) return null;
    const verified = await verifiedPayload(this.keys, token, {
      issuer: this.settings.issuer,
      clock: this.settings.clock,
      requiredClaims: ['sub', 'exp', 'iat', 'client_id'],
    });
    if (!verified || typeof verified.payload.client_id !== 'string') return null;
    const { payload } = verified;
    return {
      subject: payload.sub as string,
      clientId: payload.client_id as string,
      scopes: typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [],
      familyId: typeof payload.sid === 'string' && payload.kind === DEVELOPER_TOKEN_KIND ? payload.sid : null,
      workspaceId: typeof payload.ws === 'string' ? payload.ws : null,
      audience: ([] as string[]).concat(payload.aud ?? []),
      issuedAt: new Date((payload.iat as number) * 1000),
      expires: new Date((payload.exp as number) * 1000),
    };
  }
}
