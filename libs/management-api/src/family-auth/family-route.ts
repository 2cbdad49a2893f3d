import { requireFamilySession, type AccountTokenDeps, type FamilySession } from '@platform/domain';
import { record, uuid } from '@platform/http';
import type { ManagementScope } from '../management-scope.js';
import { FamilyCookies } from './family-cookies.js';

/** Where the API family's auth API lives: their SDK's NILEDB_API_URL is `{api_url}/v2/databases/{databaseId}`. */
export const FAMILY_BASE = '/v2/databases/{database}';

export const familyDatabaseParams = record({ database: uuid('The database id') });
export const familyTenantParams = record({ database: uuid('The database id'), tenantId: uuid('The tenant id') });
export const familyUserParams = record({ database: uuid('The database id'), userId: uuid('The user id') });
export const familyMemberParams = record({ database: uuid('The database id'), tenantId: uuid('The tenant id'), userId: uuid('The user id') });

export const FAMILY_TAGS = ['family-auth'];

/** How every route of this surface authenticates, for its description. */
export const COOKIE_AUTH =
  'Authenticated by the `nile.session-token` cookie (`__Secure-` prefixed when the `nile-secure-cookies` header is true or ' +
  'the API is served over https); a session of another database is not valid here (401 invalid_session).';

/** What a state-changing REST call must carry (family-cookies.ts, assertSdkOrigin). */
export const SDK_ORIGIN_CSRF =
  'CSRF: the `nile-origin` header (which the server SDK sends) must name an allowed origin (ALLOWED_ORIGINS), and a ' +
  'browser Origin or Referer, when present, too; otherwise 403 csrf_failed (or cross_site_request) and nothing changes.';

/** What the sign-in, sign-up and sign-out forms must carry. */
export const DOUBLE_SUBMIT_CSRF =
  'CSRF: the body’s `csrfToken` must match the `nile.csrf-token` cookie from GET /auth/csrf (double submit); otherwise 403 ' +
  'csrf_failed and nothing changes.';

/** The base URL of the family surface for one database, as the SDK is configured with it. */
export function familyBaseUrl(scope: ManagementScope, databaseId: string): string {
  return `${scope.publicApiUrl.replace(/\/+$/, '')}/v2/databases/${databaseId}`;
}

export function cookiesOf(scope: ManagementScope, header: (name: string) => string): FamilyCookies {
  return new FamilyCookies(header, scope.publicApiUrl);
}

/** The signed-in user of a request, as a user principal (401 invalid_session without a live session). */
export async function signedIn(scope: ManagementScope, databaseId: string, header: (name: string) => string): Promise<FamilySession> {
  return requireFamilySession(scope, databaseId, cookiesOf(scope, header).get('session-token'));
}

/** The use cases' dependencies for mail and one-time tokens (wired by apps/api, openMailServices). */
export function tokenDeps(scope: ManagementScope): AccountTokenDeps {
  if (!scope.accountMail) throw new Error('mail services are not wired into this API');
  return { locator: scope.locator, dataPlane: scope.dataPlane, hasher: scope.hasher, ...scope.accountMail };
}
