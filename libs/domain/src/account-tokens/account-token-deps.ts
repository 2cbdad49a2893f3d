import type { DataPlane, DataPlaneRepositories, DatabaseLocator } from '../data-plane.js';
import type { PasswordHashing } from '../password-hashing.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Detach, Mailer } from '../mail.js';
import type { MailThrottle } from '../mail-throttling.js';
import type { Database } from '../model.js';
import type { AccountTokenPlane, AccountTokenRepositories } from './account-token-ports.js';

/** How long each kind of link works (README "Email"). */
export interface OneTimeTokenLifetimes {
  passwordResetSeconds: number;
  emailVerificationSeconds: number;
  inviteSeconds: number;
}

/** An hour to reset a password, a day to verify an address, a week to accept an invite. */
export const DEFAULT_TOKEN_LIFETIMES: OneTimeTokenLifetimes = {
  passwordResetSeconds: 3600,
  emailVerificationSeconds: 86_400,
  inviteSeconds: 7 * 86_400,
};

/** What the password reset, email verification and invite use cases take. */
export interface AccountTokenDeps {
  locator: DatabaseLocator;
  dataPlane: DataPlane;
  accountTokens: AccountTokenPlane;
  mailer: Mailer;
  mailThrottle: MailThrottle;
  /** The budgets of self sign-up (SIGN_UP_POLICY, counted apart from mail); the mail throttle's when absent. */
  signUpThrottle?: MailThrottle;
  /** Runs a mail after the answer where its time would tell whether an account exists. */
  detach: Detach;
  hasher: PasswordHashing;
  lifetimes?: OneTimeTokenLifetimes;
}

/** One READY database and all its repositories these use cases need. */
export interface TokenDatabase {
  database: Database;
  data: DataPlaneRepositories;
  account: AccountTokenRepositories;
}

export function lifetimes(deps: AccountTokenDeps): OneTimeTokenLifetimes {
  return deps.lifetimes ?? DEFAULT_TOKEN_LIFETIMES;
}

/** The READY database with this id, or null. */
export async function findTokenDatabase(deps: AccountTokenDeps, databaseId: string): Promise<TokenDatabase | null> {
  const database = await deps.locator.findById(databaseId);
  if (!database || database.status !== 'READY') return null;
  return { database, data: deps.dataPlane.open(database), account: deps.accountTokens.openAccountTokens(database) };
}

export async function requireTokenDatabase(deps: AccountTokenDeps, databaseId: string): Promise<TokenDatabase> {
  const found = await findTokenDatabase(deps, databaseId);
  if (!found) throw new NotFoundError('database_not_found', `Database '${databaseId}' not found`);
  return found;
}

/** Every refused token reads the same: which check failed is nobody's business. */
export function invalidToken(): ValidationError {
  return new ValidationError('invalid_one_time_token', 'This link is not valid: it was used already, has expired, or is not for this account. Ask for a new one.');
}

/**
 * The link a mail carries: the caller's base URL (say the app's reset page) with `token` and
 * `identifier` (the address, as the API family's links carry it) added to its query.
 */
export function linkWith(base: string, token: string, email: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new ValidationError('invalid_link_base', `'${base}' is not an absolute URL to build a link from`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError('invalid_link_base', 'Links must be http or https');
  url.searchParams.set('token', token);
  url.searchParams.set('identifier', email);
  return url.toString();
}

/** Addresses are compared and stored folded: the unique index on users' emails is case-insensitive too. */
export function foldEmail(email: string): string {
  return email.trim().toLowerCase();
}
