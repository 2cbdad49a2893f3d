import type { AuthorizationRequest, GrantDeps } from './grants.js';
import { issueAuthorizationCode } from './grants.js';
import { authenticateDeveloper, type DeveloperAccountDeps } from './developers.js';

export type SignInAndAuthorizeDeps = DeveloperAccountDeps & Pick<GrantDeps, 'grants' | 'workspaces' | 'settings'>;

/**
 * The sign-in form of the authorization endpoint: the developer's password, then a code for the
 * checked request, over one unit of work (`developers` and `workspaces` share it). Answers where
 * to send the browser: back to the client with a code, or with access_denied. Throws
 * UnauthenticatedError or RateLimitedError as authenticateDeveloper does.
 */
export async function signInAndAuthorize(
  deps: SignInAndAuthorizeDeps,
  request: AuthorizationRequest,
  credentials: { email: string; password: string },
  clientAddress: string,
): Promise<string> {
  const developer = await authenticateDeveloper(deps, credentials, clientAddress);
  return issueAuthorizationCode(deps, request, developer);
}
