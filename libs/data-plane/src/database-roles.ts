/**
 * The roles each platform database has (cluster-wide objects, named after the database):
 *   - owner: owns the customer's objects; unscoped credentials are its members;
 *   - tenant: the role the platform's own isolated queries run as (SET LOCAL ROLE);
 *   - admin: BYPASSRLS, for administration; unscoped credentials may only SET ROLE to it;
 *   - scoped: the group of tenant-scoped credentials: DML on customer tables, no DDL.
 * Built-in schema step 4 creates them from current_database(), so the suffixes are spliced into
 * its SQL as well: one rule for both sides.
 */
export const DATABASE_ROLE_SUFFIXES = { owner: '_owner', tenant: '_tenant', admin: '_admin', scoped: '_scoped' } as const;

export type DatabaseRoles = { readonly [kind in keyof typeof DATABASE_ROLE_SUFFIXES]: string };

/** Physical database names whose role names stay plain identifiers within PostgreSQL's 63 characters. */
const PHYSICAL_NAME = /^[a-z_][a-z0-9_]{0,55}$/;
/** The longest database name step 4 accepts (the longest suffix still fits in 63 characters). */
export const MAX_PHYSICAL_NAME_LENGTH = 56;

/** Refuses a physical name outside the rule before it reaches SQL (physical names are generated, never typed). */
export function assertPhysicalName(physicalName: string): void {
  if (!PHYSICAL_NAME.test(physicalName)) throw new Error(`refusing physical database name '${physicalName}'`);
}

/** The per-database role names of a physical database; throws for a name that would need quoting. */
export function databaseRoleNames(physicalName: string): DatabaseRoles {
  assertPhysicalName(physicalName);
  return {
    owner: physicalName + DATABASE_ROLE_SUFFIXES.owner,
    tenant: physicalName + DATABASE_ROLE_SUFFIXES.tenant,
    admin: physicalName + DATABASE_ROLE_SUFFIXES.admin,
    scoped: physicalName + DATABASE_ROLE_SUFFIXES.scoped,
  };
}

/** PL/pgSQL declarations of the role names (owner_role, tenant_role, ...) from current_database(). */
export const ROLE_NAME_DECLARATIONS = (Object.keys(DATABASE_ROLE_SUFFIXES) as (keyof DatabaseRoles)[])
  .map((kind) => `${kind}_role name := current_database() || '${DATABASE_ROLE_SUFFIXES[kind]}';`)
  .join('\n');

/**
 * The login a move restores the customer's objects as (`<database>_mover`, within 63 characters
 * like the others): it exists only while a move restores, holds the owner role and the roles that
 * own the customer's objects, and nothing else; no attribute beyond LOGIN.
 */
export const MOVER_ROLE_SUFFIX = '_mover';

export function moverRoleName(physicalName: string): string {
  assertPhysicalName(physicalName);
  return physicalName + MOVER_ROLE_SUFFIX;
}
