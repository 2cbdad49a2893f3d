/*
 * The public face of the domain: exactly the names another project imports from
 * '@platform/domain', and nothing else. Names only the domain's own files use stay unexported, so
 * a helper can change without anyone outside noticing. To let another project use a name, add it
 * to its group below, from the file that defines it (types with `export type`).
 */

// Errors: a kind each transport maps to a status, and a stable code clients branch on.
export {
  BadGatewayError, ConflictError, DomainError, ForbiddenError, NotFoundError, RateLimitedError,
  UnauthenticatedError, UnavailableError, ValidationError,
} from './errors.js';
export type { ErrorKind } from './errors.js';

// What people type and what things are named: each rule kept once, imported by route schemas and stores.
export {
  EMAIL_MAX_LENGTH, EMAIL_PATTERN, EMAIL_RULE, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, PERSON_NAME_MAX_LENGTH,
  TENANT_NAME_MAX_LENGTH, WORKSPACE_NAME_MAX_LENGTH,
} from './account-rules.js';
export { DATABASE_NAME_MAX_LENGTH, DATABASE_NAME_PATTERN, DATABASE_NAME_RULE } from './database-name.js';
export {
  WORKSPACE_SLUG_MAX_LENGTH, WORKSPACE_SLUG_MIN_LENGTH, WORKSPACE_SLUG_PATTERN, WORKSPACE_SLUG_RULE,
} from './workspace-slug.js';
export { CLIENT_ID_MAX_LENGTH, CLIENT_ID_PATTERN, CLIENT_ID_RULE, newClientId } from './client-id.js';
export { isUuid } from './uuid.js';

// The model: entities, the callers a token stands for, and the paths that address a database or a tenant.
export { physicalDatabaseName } from './model.js';
export type {
  Database, DatabaseSource, Developer, DeveloperPrincipal, LoginResult, ManagementPrincipal, OAuthClient, OAuthClientType,
  Principal, Tenant, User, Workspace,
} from './model.js';
export type { DatabasePath, TenantPath } from './paths.js';
export { HOW_TO_GET_A_DEVELOPER_TOKEN, requireManagement } from './authorization.js';

// Control-plane ports adapters implement: repositories, provisioning, clusters, signing keys, the clock.
export { CopyImpossibleError, systemClock } from './ports.js';
export type {
  BackupHealth, Clock, ClusterDirectory, ClusterDriver, CustomerRoleRepair, DatabaseCopier, DatabaseRepository, DeveloperRepository, DiskSpace,
  OAuthClientRepository, Provisioner, ProvisioningStore, ProvisioningTask, Repositories, SecretSealer,
  SigningKeyRecord, SigningKeyRepository, StoredPrivateKey, TokenVerifier, WorkspaceInvitation,
  WorkspaceInvitationRepository, WorkspaceMember, WorkspaceMemberEditor, WorkspaceRepository, WorkspaceRole,
} from './ports.js';

// Developer accounts, workspaces, their members and invitations.
export { signUpDeveloper } from './use-cases/developers.js';
export {
  WORKSPACE_ROLES, bootstrapDeveloper, changeMemberRole, createWorkspace, currentDeveloper, getWorkspace,
  listMembers, listWorkspaces, removeMember,
} from './use-cases/workspaces.js';
export {
  INVITATIONS_PER_WORKSPACE, INVITATION_TTL_DAYS, INVITED_ROLE, acceptInvitation, declineInvitation,
  inviteMember, listInvitations, listMyInvitations, revokeInvitation,
} from './use-cases/invitations.js';

// Databases, the regions they live in, and the status a provisioner moves them to next.
export { REGIONS, regionId } from './regions.js';
export type { Region } from './regions.js';
export { DATABASE_STATUSES, DELETED_STATUS, FAILED_STATUS, SHOWN_DATABASE_STATUSES, nextProvisioningStatus, shownDatabaseStatus } from './database-status.js';
export type { DatabaseStatus, ShownDatabaseStatus } from './database-status.js';
export {
  createDatabase, deleteDatabase, getDatabase, listDatabases, listDeletedDatabases, listRegions, purgeDatabase, renameDatabase,
  restoreDatabase,
} from './use-cases/databases.js';
export type { DatabaseDeps, DeletionDeps, ProvisioningDeps } from './use-cases/databases.js';
export { copyDatabase } from './use-cases/database-copies.js';
export type { CopyDeps } from './use-cases/database-copies.js';

// Each database's data plane: its tenants and users, their sessions, and throttled password sign-in.
export { TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, USER_CONTEXT_SETTING } from './data-plane.js';
export type {
  DataPlane, DataPlaneRepositories, DatabaseLocator, ExternalIdentity, MemberReader, NewIdentityUser, NewUser,
  SessionRepository, TenantRepository, UserPatch, UserRepository, UserTokenIssuer,
} from './data-plane.js';
export { signInWait } from './sign-in-throttling.js';
export { admitHash, countHashJobs, emptyHashQueue, hashPassword, moveHashing, nextHashSteps } from './password-hashing.js';
export type {
  AdmittedHash, Admission, HashClaim, HashingEvent, HashingPolicy, HashJob, HashJobState, HashQueueState, PasswordHasher, PasswordHashing,
} from './password-hashing.js';
export type {
  FailureCount, LoginThrottle, SignInFailureStore, SignInOutcome, SignInPolicy, SignInSubject,
} from './sign-in-throttling.js';
export { addressKey } from './client-address-key.js';
export { createTenant, deleteTenant, getTenant, listTenants, renameTenant } from './use-cases/tenants.js';
export {
  createUserWithSession, currentUser, getDatabaseUser, getTenantUser, linkUser, listTenantUsers,
  listUserTenants, signIn, signOut, signUp, unlinkUser, updateDatabaseUser,
} from './use-cases/users.js';
export type { SignInDeps } from './use-cases/users.js';
export {
  databaseNotFound, deleteSelf, enabledTenantProviders, familyDatabase, familySignIn, familySignUp, findFamilySession, requireFamilySession,
} from './use-cases/family-auth.js';
export type { FamilyAuthDeps, FamilySession, FamilySignUpInput } from './use-cases/family-auth.js';
export { MAX_APP_ORIGINS, databaseAuthSettings, getAuthSettings, normalizeAppOrigin, updateAuthSettings } from './use-cases/auth-settings.js';
export type { AuthSettingsDeps, AuthSettingsStore, DatabaseAuthSettings, StoredAuthSettings } from './use-cases/auth-settings.js';

// OAuth: clients, grants, the tokens they issue, and the errors of the token endpoint.
export { API_SCOPES } from './oauth-ports.js';
export type {
  AccessTokenClaims, AccessTokens, AuthorizationCodeGrant, ClientLookup, CodeRedemption, GrantSettings,
  GrantStore, PublicKeySet, RefreshTokenRecord, RevocationList, TokenFamily, TokenScope,
} from './oauth-ports.js';
export { OAUTH_ERROR_CODES, OAuthError } from './oauth-errors.js';
export { deleteClient, listClients, registerClient, rotateClientSecret } from './use-cases/clients.js';
export type { ClientDeps, ClientSecrets } from './use-cases/clients.js';
export {
  authenticateClient, checkAuthorizationRequest, clientCredentialsTokens, exactRedirectUri, exchangeAuthorizationCode,
  introspectToken, refreshTokens, revokeToken,
} from './use-cases/grants.js';
export type { AuthorizationCheck, IssuedTokens } from './use-cases/grants.js';
export { signInAndAuthorize } from './use-cases/sign-in-and-authorize.js';

// Database credentials: the login roles a developer creates and the routes the gateway connects through.
export { CREDENTIAL_ROLE_NAME, CREDENTIAL_ROLE_PREFIX, ROLE_NAME_MAX_LENGTH } from './credential-ports.js';
export type {
  ConnectionRoute, ConnectionRoutes, Credential, CredentialRepository, LoginRoles, NewCredential,
} from './credential-ports.js';
export { createCredential, deleteCredential, listCredentials } from './use-cases/credentials.js';
export type { CredentialDeps } from './use-cases/credentials.js';

// Query insights: latency histograms, per-minute samples, the observer's view of each cluster, retention.
export { LatencyHistogram } from './insights/latency-histogram.js';
export { DEFAULT_INSIGHTS_RETENTION, DEFAULT_WINDOW_MS, GRANULARITIES, queryPerformance } from './insights/query-performance.js';
export type {
  Granularity, InsightsBucket, InsightsDeps, InsightsRetention, InsightsStore, QueryMinute, QueryMinuteSink,
  QueryPerformance,
} from './insights/query-performance.js';
export type {
  ClusterActivity, ObservedDatabase, ObserverMinute, ObserverStore,
} from './insights/observer.js';

// Single sign-on: registrations of OpenID providers, the login and its callback, and their ports.
export type {
  AuthorizationStart, NewSsoRegistration, OidcIdentity, OidcRelyingParty, PendingSsoLogin, ProviderMetadata,
  SpentSsoStateStore, SsoLoginStateStore, SsoRegistration, SsoRegistrationRepository,
} from './sso/sso-ports.js';
export {
  deleteSsoProvider, getSsoProvider, listDatabaseSsoProviders, listTenantSsoProviders, registerSsoProvider,
  updateSsoProvider,
} from './sso/registrations.js';
export type { SsoRegistrationInput } from './sso/registrations.js';
export { finishSsoLogin, ssoLocations, startSsoLogin } from './sso/sso-sign-in.js';
export type { SsoLocation, SsoSignInDeps } from './sso/sso-sign-in.js';
export { FAMILY_SSO_STATE_PURPOSE, familySsoStateContext, finishFamilySsoLogin, startFamilySsoLogin } from './sso/family-sso.js';
export type { FamilySsoDeps } from './sso/family-sso.js';
export type { SsoCallback } from './sso/sso-sign-in.js';

// Compute instances: types, their lifecycle, the step a reconciler takes next, and their cancel slots.
export {
  DEFAULT_COMPUTE_TYPES, assertCatalog, computeType, serverSettings,
} from './compute/compute-types.js';
export type { ComputeType } from './compute/compute-types.js';
export {
  COMPUTE_HEALTH_STATUSES, COMPUTE_INSTANCE_STATUSES, INSTANCE_NAME_MAX_LENGTH, LIVE_COMPUTE_STATUSES,
} from './compute/compute-instances.js';
export type {
  ComputeDriver, ComputeHealth, ComputeHealthStatus, ComputeInstance, ComputeInstanceRepository, ComputeInstanceStatus,
  ComputeOutcome, ComputeProvisioner, ComputeServer, ComputeStore, ComputeTask, InstanceWindow, ServerAddress,
} from './compute/compute-instances.js';
export { HEALTH_REASON_MAX_LENGTH, healthAfter } from './compute/compute-health.js';
export type { ServerObservation } from './compute/compute-health.js';
export { nextComputeStep } from './compute/compute-step.js';
export type { OnFailure } from './compute/compute-step.js';
export {
  canExpand, createComputeInstance, deleteComputeInstance, getComputeInstance, listComputeInstances,
  listComputeTypes, updateComputeInstance,
} from './compute/compute.js';
export type { ComputeDeps } from './compute/compute.js';
export { INSTANCE_CANCEL_SLOTS } from './cancel-slots.js';

// Paging of lists: page sizes, cursors and keyed pages.
export {
  PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, byCreated, firstPage, invalidCursor, keyedPageOf, pageByKey, pageOf,
} from './paging.js';
export type { Page, PageKey, PageRequest } from './paging.js';

// Mail, and the one-time tokens it carries: password reset, email verification, tenant invites.
export type { Detach, MailMessage, Mailer } from './mail.js';
export { DEFAULT_MAIL_POLICY, mailWait } from './mail-throttling.js';
export type { MailPolicy, MailSubject, MailThrottle } from './mail-throttling.js';
export { ONE_TIME_TOKEN_PURPOSES } from './account-tokens/account-token-ports.js';
export type {
  AccountSecrets, AccountTokenPlane, AccountTokenRepositories, OneTimeTokenPurpose, OneTimeTokenRecord, OneTimeTokenStore,
  TokenBinding, TokenExpectation,
} from './account-tokens/account-token-ports.js';
export { DEFAULT_TOKEN_LIFETIMES } from './account-tokens/account-token-deps.js';
export type { AccountTokenDeps, OneTimeTokenLifetimes } from './account-tokens/account-token-deps.js';
export { requestPasswordReset, resetPassword } from './account-tokens/password-reset.js';
export type { PasswordResetRequest } from './account-tokens/password-reset.js';
export { assertPasswordResetToken, startTokenSession } from './account-tokens/family-links.js';
export { SIGN_UP_POLICY, selfSignUp } from './account-tokens/sign-up.js';
export { requestEmailVerification, verifyEmail } from './account-tokens/email-verification.js';
export type { SignedInUser } from './use-cases/membership.js';
export { INVITES_PER_TENANT, acceptInvite, createInvite, listInvites, previewInvite, revokeInvite } from './account-tokens/tenant-invites.js';
export type { AcceptInviteInput, TenantInvite } from './account-tokens/tenant-invites.js';
