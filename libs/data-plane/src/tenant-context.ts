/**
 * The session setting that carries the current tenant into a platform database, for sessions
 * that are not bound to a tenant (the platform's own, unscoped credentials). Row-level security
 * on every table with a `tenant_id` column compares against `platform.current_tenant_id()`: the
 * tenant a scoped credential is bound to, else this setting; unset (or empty), no rows at all
 * (built-in schema step 4; before it, every row). Set it per transaction (`set_config(name, id,
 * true)`, i.e. SET LOCAL).
 */
export const TENANT_CONTEXT_SETTING = 'platform.tenant_id';

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
