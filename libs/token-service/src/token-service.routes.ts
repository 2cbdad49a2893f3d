import { healthRoutes } from '@platform/http';
import { authorizeRoute } from './authorize.route.js';
import { introspectRoute } from './introspect.route.js';
import { jwksRoute } from './jwks.route.js';
import { metadataRoutes } from './metadata.routes.js';
import { revokeRoute } from './revoke.route.js';
import { signInRoute } from './sign-in.route.js';
import { signUpPageRoute } from './sign-up-page.route.js';
import { signUpRoute } from './sign-up.route.js';
import { tokenRoute } from './token.route.js';

/**
 * The authorization endpoint again at /authorize, where the API family's command line tool opens
 * it (`https://{auth host}/authorize`): the same page, whose form posts to /oauth2/authorize.
 */
const authorizeAtRootRoute = {
  ...authorizeRoute,
  path: '/authorize',
  operationId: 'authorizeAtRoot',
  summary: 'The authorization endpoint at /authorize too, where the API family’s command line tool looks for it',
};

/** The token service's route table: health, keys, metadata, the sign-in and sign-up pages, and the OAuth endpoints. */
export const tokenServiceRoutes = [
  ...healthRoutes,
  jwksRoute,
  ...metadataRoutes,
  authorizeRoute,
  authorizeAtRootRoute,
  signInRoute,
  signUpPageRoute,
  signUpRoute,
  tokenRoute,
  revokeRoute,
  introspectRoute,
];
