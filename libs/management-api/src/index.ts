import { healthRoutes } from '@platform/http';
import { clientRoutes } from './clients.routes.js';
import { databaseRoutes } from './databases.routes.js';
import { tenantRoutes } from './tenants.routes.js';
import { userRoutes } from './users.routes.js';
import { workspaceRoutes } from './workspaces.routes.js';

export { type ManagementScope } from './management-scope.js';

/** The management API's route table: it validates requests and is the OpenAPI document. */
export const managementRoutes = [...healthRoutes, ...workspaceRoutes, ...clientRoutes, ...databaseRoutes, ...tenantRoutes, ...userRoutes];
