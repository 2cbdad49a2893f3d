import { UnauthenticatedError } from './errors.js';
import type { DeveloperPrincipal, Principal, UserPrincipal } from './model.js';

/** Workspace operations are for developers; a user token is not valid for them. */
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
