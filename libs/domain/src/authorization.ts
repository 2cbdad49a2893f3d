import { ForbiddenError } from './errors.js';
import type { DeveloperPrincipal, ManagementPrincipal, Principal, UserPrincipal } from './model.js';

/*
 * A caller whose token is valid but of the wrong kind (a client's or a user's token where a
 * developer's is needed, and the reverse) is authenticated: 403, never 401, so clients do not
 * throw the token away and sign in again for nothing.
 */

/** Said with every developer_token_required: the answer is only useful if it says where to get one. */
export const HOW_TO_GET_A_DEVELOPER_TOKEN =
  'A developer gets one by signing in through the token service (authorization code with PKCE at /oauth2/authorize, ' +
  'client platform-cli); on a local platform `npm run login` prints one';

/** Operations only a person may do (create workspaces, register clients): not users, not clients. */
export function requireDeveloper(caller: Principal): DeveloperPrincipal {
  if (caller.kind !== 'developer') {
    throw new ForbiddenError(
      'developer_token_required',
      `This operation needs a developer token, not a workspace client's or a user's. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`,
    );
  }
  return caller;
}

export function requireUser(caller: Principal): UserPrincipal {
  if (caller.kind !== 'user') throw new ForbiddenError('user_token_required', 'This operation needs a user token');
  return caller;
}

/** Workspace and database management: a developer, or a client of the workspace. */
export function requireManagement(
  caller: Principal,
  message = 'This operation needs a developer token or a workspace client’s, not a user’s',
): ManagementPrincipal {
  if (caller.kind === 'user') throw new ForbiddenError('developer_token_required', `${message}. ${HOW_TO_GET_A_DEVELOPER_TOKEN}`);
  return caller;
}
