import type {
  AccessTokens,
  ClientLookup,
  ClientSecrets,
  DeveloperRepository,
  GrantSettings,
  GrantStore,
  LoginThrottle,
  PasswordHashing,
  PublicKeySet,
  WorkspaceRepository,
} from '@platform/domain';
import type { HealthScope } from '@platform/http';

/**
 * What the token service's routes may use, opened once per request: ports and settings, no
 * logic. Each route hands it (or the part it needs) to a domain use case.
 */
export interface TokenServiceScope extends HealthScope {
  clients: ClientLookup;
  secrets: ClientSecrets;
  grants: GrantStore;
  tokens: AccessTokens;
  /** Over this request's own unit of work, shared with `workspaces`. */
  developers: DeveloperRepository;
  workspaces: WorkspaceRepository;
  hasher: PasswordHashing;
  throttle: LoginThrottle;
  /** Code and refresh-token lifetimes, the clock, and the issuer. */
  settings: GrantSettings;
  keys: PublicKeySet;
}

/** What every request shares; each request adds `developers` and `workspaces` over its own unit of work. */
export type TokenServices = Omit<TokenServiceScope, 'developers' | 'workspaces'>;
