import type {
  AccountTokenDeps,
  ClientDeps,
  ComputeDeps,
  CopyDeps,
  CredentialDeps,
  DatabaseDeps,
  DeletionDeps,
  FamilyAuthDeps,
  FamilySsoDeps,
  InsightsDeps,
  ProvisioningDeps,
  Repositories,
  SignInDeps,
  UserTokenIssuer,
} from '@platform/domain';
import { defineRoute, type HealthScope, type Route } from '@platform/http';
import type { FamilyAuthSettings } from './family-auth/family-cookies.js';
import type { SessionCookie } from './session-cookie.js';

/**
 * What a management-API handler may use, opened once per request. It is the dependencies of
 * every use case the routes call, so a handler hands the scope itself to the use case.
 */
export interface ManagementScope
  extends HealthScope, Repositories, ClientDeps, DatabaseDeps, DeletionDeps, ProvisioningDeps, SignInDeps, CredentialDeps, InsightsDeps, FamilySsoDeps, ComputeDeps, CopyDeps, FamilyAuthDeps {
  /** Whether members of a tenant may delete it (TENANT_MEMBERS_DELETE_TENANTS); off by default. */
  membersDeleteTenants?: boolean;
  /** The CSRF key and allowed origins of the API family's cookie surface. */
  familyAuth: FamilyAuthSettings;
  /** Issues a user's token when they sign in. */
  tokens: UserTokenIssuer;
  sessionCookie: SessionCookie;
  /** The public {base_url}: SSO login and callback URLs start with it. */
  publicBaseUrl: string;
  /** The public {api_url}, reported as a database's apiHost. */
  publicApiUrl: string;
  /** The PostgreSQL gateway's public postgres://host:port, the start of every dbHost. */
  gatewayUrl: string;
  /** The gateway's pooled endpoint (transaction pooling), postgres://host:port; null when the platform runs none. */
  pooledGatewayUrl?: string | null;
  /** Mail and one-time tokens (password reset, email verification, invites) of the family surface; absent, those routes fail. */
  accountMail?: Pick<AccountTokenDeps, 'accountTokens' | 'mailer' | 'mailThrottle' | 'signUpThrottle' | 'detach' | 'lifetimes'>;
}

/** The part of the scope that lives as long as the process; each request adds repositories over its own unit of work. */
export type ManagementServices = Omit<ManagementScope, keyof Repositories>;

/** A route of the management API; its path, query and body types follow from their schemas. */
export function defineManagementRoute<P = undefined, Q = undefined, B = undefined>(
  route: Route<ManagementScope, P, Q, B>,
): Route<ManagementScope, P, Q, B> {
  return defineRoute(route);
}

/** What every route that hashes a password may also answer (README "Sign-in throttling", *Hashing capacity*). */
export const HASHING_429 =
  '429 too_many_attempts with Retry-After, never a 503, also when too many password hashes are under way for the email, ' +
  'the client’s address or the database (the hashing queue).';

/** How every paged list says it pages. */
export const PAGED =
  'Paged: `limit` (1 to 1000, 1000 when omitted) and `cursor`; when there is more, a `Link: <...>; rel="next"` header ' +
  'gives the next page’s address (the body stays the array). Pages follow (created, id) order, so rows added or removed ' +
  'meanwhile never repeat or skip a row that was there throughout. 400 invalid_cursor for a cursor this list did not give.';
