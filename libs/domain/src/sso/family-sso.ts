import { ValidationError } from '../errors.js';
import type { Database } from '../model.js';
import type { TenantPath } from '../paths.js';
import { databaseNotFound } from '../use-cases/family-auth.js';
import { completeSsoLogin, startSsoLogin, takeLogin, type SsoCallback, type SsoLoginStart, type SsoSignedIn, type SsoSignInDeps } from './sso-sign-in.js';

/*
 * Single sign-on through the API family's surface (`/v2/databases/{id}/auth/signin|callback/{provider}`):
 * the SPEC's flow (state, nonce and PKCE kept server-side, once, bound to the browser), where the
 * database is named by id, the tenant by the SDK's `nile.tenant-id` at the start and by the kept
 * login at the end, and the provider sends the browser back to the app, whose SDK forwards it here.
 */

async function readyDatabase(deps: SsoSignInDeps, databaseId: string): Promise<Database> {
  const database = await deps.locator.findById(databaseId);
  if (!database || database.status !== 'READY') throw databaseNotFound(databaseId);
  return database;
}

function tenantPath(database: Database, tenantId: string): TenantPath {
  return { workspaceSlug: database.workspace.slug, databaseName: database.name, tenantId };
}

/** Starts a sign-in with the tenant's provider; `callbackUrl` is the app's redirect URI the provider must accept. */
export async function startFamilySsoLogin(
  deps: SsoSignInDeps,
  databaseId: string,
  tenantId: string,
  provider: string,
  input: { callbackUrl: string; clientAddress: string },
): Promise<SsoLoginStart> {
  return startSsoLogin(deps, tenantPath(await readyDatabase(deps, databaseId), tenantId), provider, input);
}

/**
 * Finishes a sign-in the family surface started: the state is taken once (this browser only),
 * then must belong to this database, to the provider the callback names, and to the redirect URI
 * it was started with; a login kept for another database, provider or app is refused (400
 * session_state_mismatch) and signs no one in.
 */
export async function finishFamilySsoLogin(
  deps: SsoSignInDeps,
  databaseId: string,
  callback: SsoCallback,
  expected: { provider: string; callbackUrl: string },
): Promise<SsoSignedIn> {
  const login = await takeLogin(deps, null, callback);
  const database = await readyDatabase(deps, databaseId);
  if (login.databaseId !== database.id) throw new ValidationError('session_state_mismatch', 'This sign-in was started for another database');
  return completeSsoLogin(deps, tenantPath(database, login.tenantId), login, callback, expected);
}
