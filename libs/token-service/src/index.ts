export { tokenServiceRoutes } from './token-service.routes.js';
export { tokenRoute } from './token.route.js';
export { revokeRoute } from './revoke.route.js';
export { tokenServiceApiInfo } from './api-info.js';
export type { TokenServiceScope, TokenServices } from './token-service-scope.js';
