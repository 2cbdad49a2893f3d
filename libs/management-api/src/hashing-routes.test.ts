import { expect } from 'chai';
import { declaredResponses } from '@platform/http';
import { managementRoutes } from './index.js';

// Issue 46: every route whose handler hashes or checks a password may be refused by the hashing
// queue (429 too_many_attempts with Retry-After), so its OpenAPI document must say so.
const HASHING_ROUTES = [
  'loginTenantUser',
  'loginUser',
  'createTenantUser',
  'createTenantUserV2',
  'familySignIn',
  'familySignUp',
  'familyCreateUser',
  'familyResetPassword',
  'familyAcceptInvite',
  'familyAcceptInviteForm',
];

describe('routes that hash a password (issue 46)', () => {
  it('each declares 429 in its OpenAPI responses', () => {
    const declared = Object.fromEntries(
      HASHING_ROUTES.map((operationId) => {
        const route = managementRoutes.find((candidate) => candidate.operationId === operationId);
        return [operationId, route ? declaredResponses(route).some((response) => response.status === 429) : 'no such route'];
      }),
    );
    expect(declared).to.deep.equal(Object.fromEntries(HASHING_ROUTES.map((operationId) => [operationId, true])));
  });
});
