import type {
  ClientSecrets,
  ClusterDirectory,
  DataPlane,
  DatabaseLocator,
  LoginThrottle,
  PasswordHasher,
  Provisioner,
  Repositories,
  SignInDeps,
  UserTokenIssuer,
} from '@platform/domain';

/** What a management-API handler may use; opened once per request. */
export interface ManagementScope {
  /** Repositories over this request's own EntityManager fork. */
  repos: Repositories;
  clusters: ClusterDirectory;
  provisioner: Provisioner;
  locator: DatabaseLocator;
  dataPlane: DataPlane;
  hasher: PasswordHasher;
  userTokens: UserTokenIssuer;
  throttle: LoginThrottle;
  secrets: ClientSecrets;
  sessions: { ttlSeconds: number; cookieName: string; secureCookie: boolean };
  /** The public {api_url}, reported as a database's apiHost. */
  publicApiUrl: string;
  controlPlaneReady(): Promise<boolean>;
}

/** The dependencies of the tenant and user use cases, from a request's scope. */
export function signInDeps(scope: ManagementScope): SignInDeps {
  return {
    workspaces: scope.repos.workspaces,
    databases: scope.repos.databases,
    locator: scope.locator,
    dataPlane: scope.dataPlane,
    hasher: scope.hasher,
    tokens: scope.userTokens,
    throttle: scope.throttle,
    sessionTtlSeconds: scope.sessions.ttlSeconds,
  };
}

/** The session cookie (SPEC: `auth.session-token`, `__Secure-` prefixed under https). */
export function sessionCookie(scope: ManagementScope, token: string, maxAgeSeconds: number): string {
  const attributes = [`${scope.sessions.cookieName}=${token}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (scope.sessions.secureCookie) attributes.push('Secure');
  return attributes.join('; ');
}
