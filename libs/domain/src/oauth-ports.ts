import type { Clock, OAuthClientRepository } from './ports.js';

/**
 * The scopes of management tokens. `api:read` allows reading (GET), `api:write` everything else
 * on the management API. A request that names no scope gets both.
 */
export const API_SCOPES = ['api:read', 'api:write'] as const;
export type TokenScope = (typeof API_SCOPES)[number];

/** Finds a client by id, with its secret's digest, to authenticate it or check a request it sent. */
export type ClientLookup = Pick<OAuthClientRepository, 'findForAuthentication'>;

/** The public half of the platform's signing keys, as a JSON Web Key Set (RFC 7517). */
export interface PublicKeySet {
  publicJwks(): Promise<{ keys: object[] }>;
}

/** What a code stands for, kept (by digest) for at most a minute. */
export interface AuthorizationCodeGrant {
  clientId: string;
  developerId: string;
  /** The client's workspace, which its tokens are bound to; null for first-party clients. */
  workspaceId: string | null;
  /** Exactly as the authorization request sent it: the token request must repeat it. */
  redirectUri: string;
  /** BASE64URL(SHA-256(code_verifier)) (RFC 7636, S256 only). */
  codeChallenge: string;
  scopes: string[];
  expires: Date;
}

export type CodeRedemption =
  | { outcome: 'redeemed'; grant: AuthorizationCodeGrant; familyId: string }
  /** Used before: `familyId` names what the first use issued (null if it issued nothing). */
  | { outcome: 'replayed'; familyId: string | null }
  /** Unknown, expired, or issued to another client (which does not spend it). */
  | { outcome: 'invalid' };

/** Every refresh token descends from one authorization; revoking the family ends them all. */
export interface TokenFamily {
  id: string;
  clientId: string;
  developerId: string;
  workspaceId: string | null;
  scopes: string[];
  created: Date;
  revoked: Date | null;
}

export interface RefreshTokenRecord {
  family: TokenFamily;
  /** The scopes of this token: its family's, or fewer after a narrowing refresh. */
  scopes: string[];
  created: Date;
  expires: Date;
  /** Set once the token has been exchanged: any later use is a replay. */
  used: Date | null;
}

/** Codes, refresh tokens (both by SHA-256 digest) and their families, in the control plane. */
export interface GrantStore {
  saveCode(digest: string, grant: AuthorizationCodeGrant, now: Date): Promise<void>;
  /**
   * Spends a code atomically for `clientId` and, when it was unspent and live, creates the token
   * family `familyId` for what it grants. A concurrent second redemption sees `replayed`.
   */
  redeemCode(digest: string, clientId: string, familyId: string, now: Date): Promise<CodeRedemption>;
  saveRefreshToken(digest: string, input: { familyId: string; scopes: string[]; now: Date; expires: Date }): Promise<void>;
  findRefreshToken(digest: string): Promise<RefreshTokenRecord | null>;
  /** Marks an unused token used; false when another request used it first. */
  useRefreshToken(digest: string, now: Date): Promise<boolean>;
  findFamily(id: string): Promise<TokenFamily | null>;
  /** Idempotent; stamped with the store's own clock, which resource servers poll against. */
  revokeFamily(id: string): Promise<void>;
}

/** The verified claims of an access token the platform signed. */
export interface AccessTokenClaims {
  subject: string;
  clientId: string;
  scopes: string[];
  familyId: string | null;
  workspaceId: string | null;
  audience: string[];
  issuedAt: Date;
  expires: Date;
}

/** Signs and reads the token service's access tokens. */
export interface AccessTokens {
  issueForDeveloper(input: {
    developerId: string;
    clientId: string;
    scopes: readonly string[];
    workspaceId: string | null;
    familyId: string;
  }): Promise<{ token: string; expiresIn: number }>;
  issueForClient(input: { clientId: string; workspaceId: string; scopes: readonly string[] }): Promise<{ token: string; expiresIn: number }>;
  /** The claims of a valid, unexpired token the platform signed; null for anything else. */
  read(token: string): Promise<AccessTokenClaims | null>;
}

/** Families revoked lately, as a resource server knows them (possibly a bounded time late). */
export interface RevocationList {
  isRevoked(familyId: string): boolean;
}

export interface GrantSettings {
  clock: Clock;
  /** How long a code lives (RFC 9700: briefly; at most 60 s here). */
  codeTtlSeconds: number;
  /** How long a refresh token lives unused; each rotation starts a new one. */
  refreshTtlSeconds: number;
  /** The token service's issuer URL, sent back with codes (RFC 9207 `iss`). */
  issuer: string;
}
