import type pg from 'pg';
import { CREDENTIAL_ROLE_NAME } from '@platform/domain';
import { DATABASE_ROLE_SUFFIXES, MOVER_ROLE_SUFFIX } from './database-roles.js';
import { SERVICE_ROLE_SUFFIX } from './service-role.js';

/** A customer role the audit found with more than it may have, and what it took away. */
export interface RoleRepair {
  role: string;
  /** Attributes revoked (`superuser`, `createrole`, ...) and memberships revoked (`member of <role>`). */
  removed: string[];
}

const ALL_SUFFIXES = [...Object.values(DATABASE_ROLE_SUFFIXES), SERVICE_ROLE_SUFFIX, MOVER_ROLE_SUFFIX];
/** Roles made with BYPASSRLS: administration of their own database (credentials SET ROLE to admin; the API's service role). */
const MAY_BYPASS_RLS = [DATABASE_ROLE_SUFFIXES.admin, SERVICE_ROLE_SUFFIX];
/** The groups whose members are a database's credentials (and its mover). */
const CREDENTIAL_GROUPS = [DATABASE_ROLE_SUFFIXES.owner, DATABASE_ROLE_SUFFIXES.admin, DATABASE_ROLE_SUFFIXES.scoped];

interface CustomerRole {
  database: string;
  rolname: string;
  may_bypass: boolean;
  rolsuper: boolean;
  rolcreaterole: boolean;
  rolcreatedb: boolean;
  rolreplication: boolean;
  rolbypassrls: boolean;
}

/**
 * Defence in depth: finds the roles the platform made for customers on a cluster (each platform
 * database's own roles, `<database>_owner`, `_tenant`, `_admin`, `_scoped`, `_service`, `_mover`,
 * and its credentials' roles, `cred_...` members of its groups) and takes away what none of them
 * may hold: SUPERUSER, CREATEROLE, CREATEDB, REPLICATION, BYPASSRLS (but for the admin and service
 * roles, made with it), and membership in any role that is not its own database's. A platform
 * database is one with both an `_owner` and a `_scoped` role; roles an operator made on a cluster
 * of their own match neither pattern and are left alone. `admin` is a superuser connection;
 * `physicalName` limits the audit to one database's roles. Answers what it repaired.
 */
export async function auditCustomerRoles(admin: pg.ClientBase, physicalName: string | null = null): Promise<RoleRepair[]> {
  const { rows: roles } = await admin.query<CustomerRole>(
    `with databases as (
       select d.datname from pg_catalog.pg_database d
        where ($1::name is null or d.datname = $1::name)
          and exists (select from pg_catalog.pg_roles where rolname = d.datname || $2::text)
          and exists (select from pg_catalog.pg_roles where rolname = d.datname || $3::text)
     ), own as (
       select d.datname as database, r.oid, s.suffix
         from databases d cross join pg_catalog.unnest($4::text[]) as s(suffix)
         join pg_catalog.pg_roles r on r.rolname = d.datname || s.suffix
     ), credentials as (
       -- A credential belongs to the database it was first made a member of: a later grant into
       -- another database's groups is what the audit is for.
       select distinct on (r.oid) g.database, r.oid, null::text as suffix
         from own g join pg_catalog.pg_auth_members m on m.roleid = g.oid
         join pg_catalog.pg_roles r on r.oid = m.member
        where g.suffix = any($5::text[]) and r.rolname ~ $6::text
        order by r.oid, m.oid
     )
     select c.database, r.rolname, coalesce(c.suffix = any($7::text[]), false) as may_bypass,
            r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls
       from (select * from own union select * from credentials) c join pg_catalog.pg_roles r on r.oid = c.oid
      order by r.rolname`,
    [
      physicalName,
      DATABASE_ROLE_SUFFIXES.owner,
      DATABASE_ROLE_SUFFIXES.scoped,
      ALL_SUFFIXES,
      CREDENTIAL_GROUPS,
      CREDENTIAL_ROLE_NAME.source,
      MAY_BYPASS_RLS,
    ],
  );
  const repairs = new Map<string, string[]>();
  const note = (role: string, what: string) => repairs.set(role, [...(repairs.get(role) ?? []), what]);

  for (const role of roles) {
    const forbidden = [
      role.rolsuper && 'superuser',
      role.rolcreaterole && 'createrole',
      role.rolcreatedb && 'createdb',
      role.rolreplication && 'replication',
      role.rolbypassrls && !role.may_bypass && 'bypassrls',
    ].filter((attribute): attribute is string => Boolean(attribute));
    if (forbidden.length === 0) continue;
    await admin.query(`alter role ${admin.escapeIdentifier(role.rolname)} ${forbidden.map((attribute) => `no${attribute}`).join(' ')}`);
    for (const attribute of forbidden) note(role.rolname, attribute);
  }

  // Memberships outside the role's own database: a predefined role such as pg_execute_server_program,
  // a superuser (SET ROLE would make the session one), another database's roles.
  const ownOf = new Map<string, Set<string>>();
  for (const role of roles) ownOf.set(role.database, (ownOf.get(role.database) ?? new Set()).add(role.rolname));
  const { rows: memberships } = await admin.query<{ member: string; granted: string; grantor: string }>(
    `select member.rolname as member, granted.rolname as granted, grantor.rolname as grantor
       from pg_catalog.pg_auth_members m
       join pg_catalog.pg_roles member on member.oid = m.member
       join pg_catalog.pg_roles granted on granted.oid = m.roleid
       join pg_catalog.pg_roles grantor on grantor.oid = m.grantor
      where member.rolname = any($1::name[])
      order by member.rolname, granted.rolname`,
    [roles.map((role) => role.rolname)],
  );
  for (const membership of memberships) {
    const databases = roles.filter((role) => role.rolname === membership.member).map((role) => role.database);
    if (databases.some((database) => ownOf.get(database)?.has(membership.granted))) continue;
    const id = (name: string) => admin.escapeIdentifier(name);
    await admin.query(`revoke ${id(membership.granted)} from ${id(membership.member)} granted by ${id(membership.grantor)} cascade`);
    note(membership.member, `member of ${membership.granted}`);
  }
  return [...repairs].map(([role, removed]) => ({ role, removed }));
}
