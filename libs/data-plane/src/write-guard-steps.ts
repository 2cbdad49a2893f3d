import { DATABASE_ROLE_SUFFIXES } from './database-roles.js';
import { TENANT_CONTEXT_SETTING, UNTOUCHED_SCHEMAS } from './tenant-context.js';

/*
 * These steps run on databases that already hold customer objects, as a superuser: every built-in
 * is named with its schema, and nothing calls a function a customer could have made.
 */

/** The trigger every tenant-aware table gets from step 10. */
export const TRUNCATE_GUARD_TRIGGER = 'tenant_truncate_guard';

/** PL/pgSQL declarations of the two role names the steps use, every built-in qualified. */
const ROLES = `
    owner_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.owner}';
    scoped_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.scoped}';`;

/** SQL: does `relation` (an oid expression, never of the aliases tc, tn, ta used here) have a live tenant_id column, outside the untouched schemas. */
function hasTenantColumn(relation: string): string {
  return `exists (
    select from pg_catalog.pg_class tc
      join pg_catalog.pg_namespace tn on tn.oid = tc.relnamespace
      join pg_catalog.pg_attribute ta on ta.attrelid = tc.oid and ta.attname = 'tenant_id' and ta.attnum > 0 and not ta.attisdropped
     where tc.oid = ${relation} and tc.relkind in ('r', 'p') and tn.nspname not in ${UNTOUCHED_SCHEMAS})`;
}

/**
 * Step 10: TRUNCATE ignores row-level security, so on a tenant-aware table it would empty every
 * tenant's rows. A BEFORE TRUNCATE statement trigger on each such table refuses it (42501) to a
 * tenant-scoped credential (a member of `<db>_scoped`, whether or not the owner granted it
 * TRUNCATE) and to any session with a tenant context set; an unscoped credential with no tenant
 * set, which sees every tenant anyway, may still truncate. The step 2/4 event trigger now adds the
 * trigger to tables made (or made tenant-aware) later. The table's owner can drop the trigger:
 * it guards against mistakes and scoped credentials, not against the database's owner.
 */
export const TRUNCATE_GUARD_STEP = `
  create function platform.refuse_tenant_truncate() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    ${ROLES}
  begin
    if nullif(pg_catalog.current_setting('${TENANT_CONTEXT_SETTING}', true), '') is not null
       or exists (select from pg_catalog.pg_auth_members m
                   where m.roleid = (select oid from pg_catalog.pg_roles where rolname = scoped_role)
                     and m.member = (select oid from pg_catalog.pg_roles where rolname = session_user)) then
      raise exception using
        errcode = 'insufficient_privilege',
        message = pg_catalog.format('TRUNCATE of tenant-aware table %I.%I is refused to a tenant-scoped credential or in a tenant context: it ignores row-level security and would empty every tenant', tg_table_schema, tg_table_name),
        hint = 'DELETE the tenant''s rows instead.';
    end if;
    return null;
  end
  $function$;
  revoke all on function platform.refuse_tenant_truncate() from public;

  create function platform.guard_tenant_truncate(relation oid) returns void
    language plpgsql
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    if ${hasTenantColumn('relation')}
       and not exists (select from pg_catalog.pg_trigger where tgrelid = relation and tgname = '${TRUNCATE_GUARD_TRIGGER}') then
      execute pg_catalog.format('create trigger ${TRUNCATE_GUARD_TRIGGER} before truncate on %s for each statement execute function platform.refuse_tenant_truncate()',
        relation::pg_catalog.regclass);
    end if;
  end
  $function$;
  revoke all on function platform.guard_tenant_truncate(oid) from public;

  -- Step 4's trigger function, guarding TRUNCATE too; otherwise as it was.
  create or replace function platform.enforce_tenant_isolation() returns event_trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    relation record;
  begin
    -- A column added to a parent reaches its children too, which the command does not list.
    for relation in
      with recursive touched(relid) as (
        select objid from pg_catalog.pg_event_trigger_ddl_commands() where classid = 'pg_catalog.pg_class'::pg_catalog.regclass
        union
        select i.inhrelid from touched join pg_catalog.pg_inherits i on i.inhparent = touched.relid
      )
      select relid from touched
    loop
      perform platform.secure_tenant_table(relation.relid, false);
      perform platform.guard_tenant_truncate(relation.relid);
    end loop;
  end
  $function$;

  do $existing$
  declare
    existing record;
  begin
    for existing in
      select c.oid from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS}
    loop
      perform platform.guard_tenant_truncate(existing.oid);
    end loop;
  end
  $existing$;
`;

/**
 * Step 11: a tenant-scoped credential reads shared tables (those without tenant_id, whose rows
 * belong to no tenant) but does not change them: on such tables `<db>_scoped` keeps SELECT only,
 * and a table created later gets SELECT only (tenant-aware ones still get DML, views too, since a
 * view runs with its invoker's rights on the tables below). The database's owner may grant more
 * (`GRANT INSERT ON ... TO <db>_scoped`); a later ALTER of the table keeps that grant.
 */
export const READ_ONLY_SHARED_TABLES_STEP = `
  do $revoke$
  declare
    ${ROLES}
    relation record;
  begin
    for relation in
      select c.oid from pg_catalog.pg_class c
       where c.relnamespace = 'public'::pg_catalog.regnamespace and c.relkind in ('r', 'p')
         and c.relowner = (select oid from pg_catalog.pg_roles where rolname = owner_role)
         and not ${hasTenantColumn('c.oid')}
    loop
      execute pg_catalog.format('revoke insert, update, delete on %s from %I', relation.oid::pg_catalog.regclass, scoped_role);
    end loop;
  end
  $revoke$;

  -- Step 4's hand-over, granting by kind of table; otherwise as it was.
  create or replace function platform.hand_over_customer_objects() returns event_trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    ${ROLES}
    owner_oid oid := (select oid from pg_catalog.pg_roles where rolname = owner_role);
    command record;
    object_owner oid;
    kind "char";
  begin
    for command in
      select distinct classid, objid, object_type, object_identity from pg_catalog.pg_event_trigger_ddl_commands()
       where schema_name = 'public' and not in_extension
         and classid in ('pg_catalog.pg_class'::pg_catalog.regclass, 'pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_type'::pg_catalog.regclass)
    loop
      kind := (select relkind from pg_catalog.pg_class where oid = command.objid and command.classid = 'pg_catalog.pg_class'::pg_catalog.regclass);
      continue when kind is not null and kind not in ('r', 'p', 'v', 'm', 'S');
      object_owner := case command.classid
        when 'pg_catalog.pg_class'::pg_catalog.regclass then (select relowner from pg_catalog.pg_class where oid = command.objid)
        when 'pg_catalog.pg_proc'::pg_catalog.regclass then (select proowner from pg_catalog.pg_proc where oid = command.objid)
        else (select typowner from pg_catalog.pg_type where oid = command.objid) end;
      -- Only what the owner role's members create: the platform's and the tenant role's objects stay theirs.
      continue when object_owner is null
        or not (object_owner = owner_oid or exists (select from pg_catalog.pg_auth_members where member = object_owner and roleid = owner_oid));
      -- A sequence owned by a column follows its table.
      if object_owner <> owner_oid and not (kind = 'S' and exists (
           select from pg_catalog.pg_depend where classid = 'pg_catalog.pg_class'::pg_catalog.regclass and objid = command.objid
              and refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass and deptype in ('a', 'i'))) then
        execute pg_catalog.format('alter %s %s owner to %I', command.object_type, command.object_identity, owner_role);
      end if;
      if (kind in ('r', 'p') and ${hasTenantColumn('command.objid')}) or kind = 'v' then
        execute pg_catalog.format('grant select, insert, update, delete on %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      elsif kind in ('r', 'p', 'm') then
        execute pg_catalog.format('grant select on %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      elsif kind = 'S' then
        execute pg_catalog.format('grant usage, select on sequence %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      end if;
    end loop;
  end
  $function$;
`;
