import type { Database, User } from '../model.js';

/**
 * One-time tokens: a random secret mailed as part of a link, that proves whoever presents it read
 * that mail. Single-use, short-lived, bound to one database (they live in its built-in schema), to
 * a purpose, and to a user (or, for an invite, an email and a tenant). Stores keep only the
 * SHA-256 digest of the secret.
 */
export const ONE_TIME_TOKEN_PURPOSES = ['password_reset', 'email_verification', 'tenant_invite'] as const;
export type OneTimeTokenPurpose = (typeof ONE_TIME_TOKEN_PURPOSES)[number];

/** What a token is bound to when it is issued. */
export interface TokenBinding {
  purpose: OneTimeTokenPurpose;
  /** The account it acts on (password reset, email verification). */
  userId?: string;
  /** The address it was mailed to, folded to lower case; for an invite, the whole subject. */
  email: string;
  /** The tenant an invite is to. */
  tenantId?: string;
  /** Who asked for it (the inviting user). */
  createdBy?: string;
}

/** A token as stored: never its secret. */
export interface OneTimeTokenRecord {
  id: string;
  purpose: OneTimeTokenPurpose;
  userId: string | null;
  email: string;
  tenantId: string | null;
  createdBy: string | null;
  created: Date;
  expires: Date;
}

/** What a presented token must match, beside being live: a token of another purpose, account or tenant is refused. */
export interface TokenExpectation {
  purpose: OneTimeTokenPurpose;
  userId?: string;
  email?: string;
  tenantId?: string;
}

/** The one-time tokens of one database. */
export interface OneTimeTokenStore {
  /** A new token: its secret (shown once, in the mail) and its record. */
  issue(binding: TokenBinding, ttlSeconds: number): Promise<{ token: string; record: OneTimeTokenRecord }>;
  /** The live token (unused, unexpired, unrevoked) matching the expectation; reads only. */
  find(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null>;
  /**
   * Uses the token up, atomically: of concurrent calls with one token exactly one gets its record,
   * and a replay, an expired or revoked token, or one that does not match `expect` gets null
   * (and a mismatch leaves the token as it was).
   */
  consume(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null>;
  /** The live tokens of a purpose for a tenant, newest first (the pending invites). */
  listLive(purpose: OneTimeTokenPurpose, tenantId: string): Promise<OneTimeTokenRecord[]>;
  /** Revokes one live token of the purpose and tenant; false when there was none. */
  revoke(id: string, purpose: OneTimeTokenPurpose, tenantId: string): Promise<boolean>;
  /** Revokes every live token of the purpose for a user, or for an email in a tenant (a new invite replaces the old). */
  revokeAll(purpose: OneTimeTokenPurpose, subject: { userId: string } | { email: string; tenantId: string }): Promise<number>;
}

/** What a token lets its bearer change in an account. */
export interface AccountSecrets {
  /**
   * Sets (or adds) the user's password, if their email is still `email` (case-insensitive): a
   * token mailed to an address the account no longer has does nothing. False when the user is gone
   * or their address changed.
   */
  setPassword(userId: string, email: string, passwordHash: string): Promise<boolean>;
  /** Marks the user's email verified, if it is still `email` (case-insensitive); false otherwise. */
  markEmailVerified(userId: string, email: string): Promise<boolean>;
  /**
   * Creates a user without a password, their address verified, as a member of the live tenant, at
   * once (an accepted invite: they set a password by reset, or sign in another way).
   * ConflictError `email_taken`; NotFoundError `tenant_not_found`.
   */
  createInvitedUser(input: { email: string; name: string | null }, tenantId: string): Promise<User>;
  /** Ends every live session of the user but `keepSessionId`; answers how many ended. */
  endSessions(userId: string, keepSessionId?: string): Promise<number>;
}

export interface AccountTokenRepositories {
  tokens: OneTimeTokenStore;
  secrets: AccountSecrets;
}

/** Reaches the one-time tokens and account secrets of each platform database (libs/data-plane). */
export interface AccountTokenPlane {
  openAccountTokens(database: Database): AccountTokenRepositories;
}
