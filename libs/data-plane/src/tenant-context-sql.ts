// Names and SQL pieces that built-in step 12 (tenant-context-step.ts) and its row guard
// (tenant-row-guard.ts) share.
import { DATABASE_ROLE_SUFFIXES } from './database-roles.js';
import { TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, USER_CONTEXT_SETTING } from './tenant-context.js';

/** The policies step 12 gives tenant-aware tables for unscoped credentials (members of `<db>_owner`): permissive, and its restrictive twin. */
export const UNSCOPED_TENANT_POLICY = 'tenant_isolation_unscoped';
export const REQUIRED_UNSCOPED_TENANT_POLICY = 'tenant_isolation_unscoped_required';
/** The row trigger that explains a write outside an unscoped credential's tenant context, and fills in a missing tenant_id. */
export const TENANT_ROW_GUARD_TRIGGER = 'tenant_context_guard';

// Spliced into SQL text below: refuse anything that would need quoting.
for (const name of [TENANT_CONTEXT_SETTING, TENANT_CONTEXT_ALIAS, USER_CONTEXT_SETTING]) {
  if (!/^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected setting name '${name}'`);
}

/** PL/pgSQL declarations of the role names, every built-in qualified. */
export const ROLES = `
    owner_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.owner}';
    tenant_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.tenant}';
    scoped_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.scoped}';`;

/** SQL: is session_user a member, by a grant, of the database's role with this suffix (platform.session_is_member). */
export function sessionIsMemberOf(suffix: string): string {
  return `platform.session_is_member('${suffix}')`;
}

/** The value of a setting, NULL when unset or empty (missing_ok: never an error). */
export function settingValue(name: string): string {
  return `nullif(pg_catalog.current_setting('${name}', true), '')`;
}

/** What an unscoped credential may see of a row: every tenant's without a context, else its context's. */
export function unscopedCheck(tenantCheck: string): string {
  return `(select platform.sees_all_tenants()) or ${tenantCheck}`;
}

export const CURRENT_TENANT = '(select platform.current_tenant_id())';
