/**
 * The session setting that carries the current tenant into a platform database. Row-level
 * security on every table with a `tenant_id` column compares against it: unset (or empty) shows
 * every row, for administration; set, only that tenant's rows, and writes of another tenant's
 * `tenant_id` are refused. Set it per transaction (`set_config(name, id, true)`, i.e. SET LOCAL).
 */
export const TENANT_CONTEXT_SETTING = 'platform.tenant_id';

/**
 * A role without superuser or BYPASSRLS that queries run as (SET LOCAL ROLE) when they must be
 * subject to row-level security; customer credentials will be granted it. Cluster-wide.
 */
export const TENANT_APP_ROLE = 'platform_tenant_app';
