import { ValidationError } from '../errors.js';
import type { Principal } from '../model.js';
import { databaseNotFound, getDatabase, type DatabaseDeps } from './databases.js';

/*
 * Each database's settings for the API family's auth API (README "Apps built on the family's
 * SDK"): whether anyone may sign up, and the origins of the database's own apps, where mailed
 * links that carry a token (password reset, email verification, invites) may point. Per
 * database, because a platform holds the apps of many developers: one company's app must never
 * receive the tokens of another company's users.
 */

/** The settings as they hold for a database. */
export interface DatabaseAuthSettings {
  /** Anyone may create an account through POST /v2/databases/{id}/signup. */
  selfSignUp: boolean;
  /** Origins (`https://host[:port]`, or `http://localhost[:port]`) whose URLs mailed token links may use. */
  appOrigins: string[];
}

/** What a database stores: `selfSignUp` null follows the platform's default (SELF_SIGN_UP). */
export interface StoredAuthSettings {
  selfSignUp: boolean | null;
  appOrigins: string[];
}

/** The stored settings of each database (the control plane's database_auth_settings). */
export interface AuthSettingsStore {
  find(databaseId: string): Promise<StoredAuthSettings | null>;
  /**
   * Sets the fields given and keeps the others, in one step: concurrent changes of different fields
   * both hold. False, with nothing written, when the database is gone (purged since it was found).
   */
  update(databaseId: string, patch: Partial<StoredAuthSettings>): Promise<boolean>;
}

export interface AuthSettingsDeps {
  /** The platform default of self sign-up for databases that never set it (SELF_SIGN_UP); off when absent. */
  selfSignUp?: boolean;
  /** Absent, every database has the platform defaults and no app origins. */
  authSettings?: AuthSettingsStore;
}

export const MAX_APP_ORIGINS = 20;

/** The settings that hold for a database: its own, over the platform's defaults. */
export async function databaseAuthSettings(deps: AuthSettingsDeps, databaseId: string): Promise<DatabaseAuthSettings> {
  const stored = (await deps.authSettings?.find(databaseId)) ?? null;
  return { selfSignUp: stored?.selfSignUp ?? deps.selfSignUp ?? false, appOrigins: stored?.appOrigins ?? [] };
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function invalidOrigin(origin: string, why: string): ValidationError {
  return new ValidationError('invalid_app_origin', `'${origin}' is not an app origin: ${why}`);
}

/**
 * An app origin as stored: `https://host[:port]`, or plain http on a loopback host only (a
 * laptop's dev server); no user, path, query or fragment (a trailing `/` is dropped). 400
 * `invalid_app_origin` otherwise.
 */
export function normalizeAppOrigin(origin: string): string {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw invalidOrigin(origin, 'not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw invalidOrigin(origin, 'only https, or http on localhost');
  }
  if (url.username || url.password) throw invalidOrigin(origin, 'no user or password');
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(origin)) throw invalidOrigin(origin, 'an origin has no path, query or fragment (scheme://host[:port])');
  return url.origin;
}

/** A database's auth settings, for a developer of its workspace (404 as for any database otherwise). */
export async function getAuthSettings(deps: DatabaseDeps & AuthSettingsDeps, caller: Principal, workspaceSlug: string, databaseName: string): Promise<DatabaseAuthSettings> {
  const database = await getDatabase(deps, caller, workspaceSlug, databaseName);
  return databaseAuthSettings(deps, database.id);
}

/**
 * Changes a database's auth settings: each field given replaces its value, each omitted keeps it.
 * `selfSignUp: null` follows the platform default again. Origins are checked (400
 * `invalid_app_origin`, at most MAX_APP_ORIGINS: 400 `too_many_app_origins`) and kept unique, in
 * order. Nothing changes on a refusal. A database purged meanwhile is 404 `database_not_found`.
 */
export async function updateAuthSettings(
  deps: DatabaseDeps & AuthSettingsDeps,
  caller: Principal,
  workspaceSlug: string,
  databaseName: string,
  patch: { selfSignUp?: boolean | null; appOrigins?: string[] },
): Promise<DatabaseAuthSettings> {
  const database = await getDatabase(deps, caller, workspaceSlug, databaseName);
  if (patch.appOrigins && patch.appOrigins.length > MAX_APP_ORIGINS) {
    throw new ValidationError('too_many_app_origins', `A database lists at most ${MAX_APP_ORIGINS} app origins`);
  }
  const origins = patch.appOrigins === undefined ? undefined : [...new Set(patch.appOrigins.map(normalizeAppOrigin))];
  if (!deps.authSettings) throw new Error('auth settings are not wired into this API');
  const written = await deps.authSettings.update(database.id, {
    ...(patch.selfSignUp !== undefined ? { selfSignUp: patch.selfSignUp } : {}),
    ...(origins !== undefined ? { appOrigins: origins } : {}),
  });
  // Purged between the read above and the write: as if it had not been found.
  if (!written) throw databaseNotFound(databaseName);
  return databaseAuthSettings(deps, database.id);
}
