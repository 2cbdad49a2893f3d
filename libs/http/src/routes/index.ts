import { clientRoutes } from './clients.routes.js';
import { databaseRoutes } from './databases.routes.js';
import { healthRoutes } from './health.routes.js';
import { tenantRoutes } from './tenants.routes.js';
import { userRoutes } from './users.routes.js';
import { workspaceRoutes } from './workspaces.routes.js';

export { signInDeps, sessionCookie, type ApiScope } from './api-scope.js';
export { tokenServiceRoutes, type TokenServiceScope } from './token-service.routes.js';
/** The management API's route table: it validates requests and is the OpenAPI document. */
export const managementRoutes = [...healthRoutes, ...workspaceRoutes, ...clientRoutes, ...databaseRoutes, ...tenantRoutes, ...userRoutes];
