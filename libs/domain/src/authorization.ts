import { UnauthenticatedError } from './errors.js';
import type { DeveloperPrincipal, ManagementPrincipal, Principal, UserPrincipal } from './model.js';

/** Operations only a person may do (create workspaces, register clients): not users, not clients. */
export function requireDeveloper(caller: Principal): DeveloperPrincipal {
  if (caller.kind !== 'developer') {
    throw new UnauthenticatedError('This operation needs a developer token', 'developer_token_required');
  }
  return caller;
}

export function requireUser(caller: Principal): UserPrincipal {
  if (caller.kind !== 'user') throw new UnauthenticatedError('This operation needs a user token', 'user_token_required');
  return caller;
}

/** Workspace and database management: a developer, or a client of the workspace. */
export function requireManagement(caller: Principal): ManagementPrincipal {
  if (caller.kind === 'user') {
    throw new UnauthenticatedError('This operation needs a developer token', 'developer_token_required');
  }
  return caller;
}
