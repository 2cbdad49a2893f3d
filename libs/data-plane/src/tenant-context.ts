// The tenant setting's name is the domain's (TENANT_CONTEXT_SETTING): the gateway reads it too.
export { TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, USER_CONTEXT_SETTING } from '@platform/domain';

/**
 * The cluster-wide role that steps 2 and 3 gave the tenant-aware tables to. Step 4 takes every
 * privilege it had in a database away and gives it to that database's own tenant role instead
 * (see database-roles.ts); it stays only because older databases of the cluster may still use it.
 */
export const TENANT_APP_ROLE = 'platform_tenant_app';

/** The policy every tenant-aware table gets, and (from step 4) its restrictive twin. */
export const TENANT_POLICY = 'tenant_isolation';
export const REQUIRED_TENANT_POLICY = 'tenant_isolation_required';

/** Schemas whose tables are never made tenant-aware: the platform's own, and the system's. */
export const UNTOUCHED_SCHEMAS = `('auth', 'platform', 'pg_catalog', 'information_schema')`;
