export { CONNECTION_BUDGET_DEFAULTS, ConnectionBudget, type ConnectionBudgetOptions } from './connection-budget.js';
export { PINNED_SEARCH_PATH_OPTIONS } from './search-path.js';
export { PgDataPlane } from './pg-data-plane.js';
export { BUILT_IN_SCHEMA_STEPS, BUILT_IN_SCHEMA_VERSION } from './built-in-schema.js';
export { installBuiltInSchema, installedSchemaVersion } from './schema-installer.js';
export { TENANT_CONTEXT_SETTING } from './tenant-context.js';
export { assertPhysicalName, databaseRoleNames, moverRoleName, MOVER_ROLE_SUFFIX, DATABASE_ROLE_SUFFIXES, type DatabaseRoles } from './database-roles.js';
export { scramVerifier } from './scram-verifier.js';
export { createCredentialRole, credentialRoleName, credentialRolesOf, dropCredentialRole, dropDatabaseRoles } from './credential-roles.js';
export { enableServiceLogin, serviceRoleName, serviceUrl } from './service-role.js';
export { auditCustomerRoles, type RoleRepair } from './role-audit.js';
export {
  applyDatabaseLimits,
  DATABASE_LIMIT_DEFAULTS,
  setDatabaseAllowConnections,
  setDatabaseConnectionLimit,
  type CredentialSessionLimits,
  type DatabaseLimits,
} from './database-limits.js';
