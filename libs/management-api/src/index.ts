import { healthRoutes } from '@platform/http';
import { authSettingsRoutes } from './auth-settings.routes.js';
import { clientRoutes } from './clients.routes.js';
import { computeRoutes } from './compute.routes.js';
import { credentialRoutes } from './credentials.routes.js';
import { databaseRoutes } from './databases.routes.js';
import { developerRoutes } from './developers.routes.js';
import { familyAuthRoutes } from './family-auth/auth.routes.js';
import { familySignUpRoutes } from './family-auth/signup.routes.js';
import { familyInviteLandingRoutes } from './family-auth/invite-landing.routes.js';
import { familySsoRoutes } from './family-auth/sso.routes.js';
import { familyInviteRoutes } from './family-auth/invite.routes.js';
import { familyMailRoutes } from './family-auth/mail.routes.js';
import { familyResourceRoutes } from './family-auth/resources.routes.js';
import { insightRoutes } from './insights.routes.js';
import { ssoRoutes } from './sso.routes.js';
import { tenantRoutes } from './tenants.routes.js';
import { userRoutes } from './users.routes.js';
import { workspaceRoutes } from './workspaces.routes.js';

export { type ManagementScope, type ManagementServices } from './management-scope.js';
export { managementApiInfo } from './api-info.js';
export { sessionCookieFor, type SessionCookie } from './session-cookie.js';
export type { FamilyAuthSettings } from './family-auth/family-cookies.js';

/** The management API's route table: it validates requests and is the OpenAPI document. */
export const managementRoutes = [...healthRoutes, ...developerRoutes, ...workspaceRoutes, ...clientRoutes, ...databaseRoutes, ...authSettingsRoutes, ...computeRoutes, ...credentialRoutes, ...insightRoutes, ...tenantRoutes, ...userRoutes, ...ssoRoutes, ...familyAuthRoutes, ...familySignUpRoutes, ...familySsoRoutes, ...familyResourceRoutes, ...familyMailRoutes, ...familyInviteRoutes, ...familyInviteLandingRoutes];
