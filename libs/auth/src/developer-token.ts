import { randomUUID } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { UnauthenticatedError, type Clock, type DeveloperPrincipal, type TokenVerifier } from '@platform/domain';
import { SIGNING_ALG, type KeySet } from './key-set.js';

/** The token's `typ` header (RFC 9068) and the claim that says whose token it is. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
export const DEVELOPER_TOKEN_KIND = 'developer';

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

/** Signs a developer access token (RFC 9068 claims) with the current key of the set. */
export async function issueDeveloperToken(
  keys: KeySet,
  settings: TokenSettings & { clock: Clock },
  input: { developerId: string; clientId: string; scopes: readonly string[]; ttlSeconds: number },
): Promise<IssuedToken> {
  const { kid, key } = await keys.signingKey();
  const issuedAt = Math.floor(settings.clock.now().getTime() / 1000);
  const token = await new SignJWT({
    client_id: input.clientId,
    scope: input.scopes.join(' '),
    kind: DEVELOPER_TOKEN_KIND,
  })
    .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(settings.issuer)
    .setAudience(settings.audience)
    .setSubject(input.developerId)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + input.ttlSeconds)
    .setJti(randomUUID())
    .sign(key);
  return { token, expiresIn: input.ttlSeconds, expiresAt: new Date((issuedAt + input.ttlSeconds) * 1000) };
}

/**
 * Verifies bearer tokens locally: signature by a key of the set (ES256 only, so `alg: none` and
 * algorithm confusion fail), `typ`, issuer, audience, expiry. Every failure reads the same to the
 * client; the reason is for logs.
 */
export class JwtTokenVerifier implements TokenVerifier {
  constructor(
    private readonly keys: KeySet,
    private readonly settings: TokenSettings & { clock: Clock; clockToleranceSeconds?: number },
  ) {}

  async verify(token: string): Promise<DeveloperPrincipal> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw invalidToken();
    }
    if (!kid) throw invalidToken();
    const key = await this.keys.verificationKey(kid);
    if (!key) throw invalidToken();
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALG],
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        typ: ACCESS_TOKEN_TYPE,
        currentDate: this.settings.clock.now(),
        clockTolerance: this.settings.clockToleranceSeconds ?? 5,
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      if (payload.kind !== DEVELOPER_TOKEN_KIND || typeof payload.sub !== 'string') throw invalidToken();
      const scope = typeof payload.scope === 'string' ? payload.scope : '';
      return { kind: 'developer', developerId: payload.sub, scopes: scope.split(' ').filter(Boolean) };
    } catch (error) {
      if (error instanceof errors.JOSEError || error instanceof UnauthenticatedError) throw invalidToken();
      throw error;
    }
  }
}

function invalidToken(): UnauthenticatedError {
  return new UnauthenticatedError('The access token is missing, invalid or expired', 'invalid_token');
}
