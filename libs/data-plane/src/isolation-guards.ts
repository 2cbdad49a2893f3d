import { ROLE_NAME_DECLARATIONS } from './database-roles.js';
import { REQUIRED_TENANT_POLICY, TENANT_POLICY } from './tenant-context.js';
import { REQUIRED_UNSCOPED_TENANT_POLICY, UNSCOPED_TENANT_POLICY } from './tenant-context-step.js';

/** SQL: is the table `relation` (an oid expression) tenant-aware: a live tenant_id column, or the platform's policies. */
function isTenantAware(relation: string): string {
  return `(exists (select from pg_attribute where attrelid = ${relation} and attname = 'tenant_id' and attnum > 0 and not attisdropped)
           or exists (select from pg_policy where polrelid = ${relation} and polname in ('${TENANT_POLICY}', '${REQUIRED_TENANT_POLICY}')))`;
}

/**
 * SQL: is the table `relation`, or one below it, tenant-aware under an ancestor that is not. A
 * query through a parent applies the parent's policies only, so such an ancestor reads and writes
 * every tenant's rows of its children.
 */
function inheritsAroundRowSecurity(relation: string): string {
  return `exists (
    with recursive below(relid) as (
      select ${relation}
      union
      select i.inhrelid from below join pg_inherits i on i.inhparent = below.relid
    ), above(relid, ancestor) as (
      select i.inhrelid, i.inhparent from below join pg_inherits i on i.inhrelid = below.relid
      union
      select above.relid, i.inhparent from above join pg_inherits i on i.inhrelid = above.ancestor
    )
    select from above where ${isTenantAware('above.relid')} and not ${isTenantAware('above.ancestor')})`;
}

/**
 * SQL: does the table `relation` have a tenant_id column the policies cannot trust: of a type other
 * than uuid, text or varchar (a customer's type may carry a customer's cast to text), or with a
 * nondeterministic collation (which may declare every tenant id equal).
 */
function hasUntrustedTenantColumn(relation: string): string {
  return `exists (
    select from pg_attribute a left join pg_collation l on l.oid = a.attcollation
     where a.attrelid = ${relation} and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
       and (a.atttypid not in ('uuid'::regtype, 'text'::regtype, 'varchar'::regtype) or not coalesce(l.collisdeterministic, true)))`;
}

/** The names of the policies the platform gives a tenant-aware table, as an SQL list of literals. */
const PLATFORM_POLICY_NAMES = [TENANT_POLICY, REQUIRED_TENANT_POLICY, UNSCOPED_TENANT_POLICY, REQUIRED_UNSCOPED_TENANT_POLICY].map((name) => `'${name}'`).join(', ');

/** SQL: does the table `relation` (an oid expression) still have a live tenant_id column. */
function hasLiveTenantColumn(relation: string): string {
  return `exists (select from pg_attribute where attrelid = ${relation} and attname = 'tenant_id' and attnum > 0 and not attisdropped)`;
}

/** Raises insufficient_privilege (42501) with a message whose %s take the arguments. */
function refuse(message: string, ...args: string[]): string {
  return `raise exception using errcode = 'insufficient_privilege', message = format('${message}'${args.map((arg) => `, ${arg}`).join('')});`;
}

/**
 * SQL that creates platform.refuse_isolation_bypass(). With `restores` (step 14) it lets a table
 * that still has its live tenant_id column lose the platform's policies or its row-level security,
 * since step 14's trigger and enforce_tenant_isolation put them back before the statement ends;
 * without it (step 4) it refuses that too.
 */
export function refuseIsolationBypassFunction(restores: boolean): string {
  return `
  create ${restores ? 'or replace ' : ''}function platform.refuse_isolation_bypass() returns event_trigger
    language plpgsql
    -- Runs with the caller's rights: pin the search path so no object of theirs is picked up.
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    command record;
    target record;
  begin
    if (select rolsuper from pg_roles where rolname = current_user) then
      return;
    end if;
    if tg_event = 'sql_drop' then
      for command in
        select to_regclass(format('%I.%I', address_names[1], address_names[2])) as relation, address_names[3] as policy, object_identity
          from pg_event_trigger_dropped_objects() where object_type = 'policy'
      loop
        -- A policy dropped with its table leaves no table behind.
        if command.relation is not null and (command.policy in ('${TENANT_POLICY}', '${REQUIRED_TENANT_POLICY}') or ${isTenantAware('command.relation')})${restores ? ` and not (command.policy in (${PLATFORM_POLICY_NAMES}) and ${hasLiveTenantColumn('command.relation')})` : ''} then
          ${refuse('policy %s of a tenant-aware table cannot be dropped', 'command.object_identity')}
        end if;
      end loop;
      return;
    end if;
    for command in select distinct classid, objid, command_tag, object_identity from pg_event_trigger_ddl_commands() loop
      if command.classid = 'pg_policy'::regclass then
        if ${isTenantAware('(select polrelid from pg_policy where oid = command.objid)')} then
          ${refuse('policy %s cannot be created or altered: its table is tenant-aware', 'command.object_identity')}
        end if;
      elsif command.classid = 'pg_proc'::regclass then
        if (select prosecdef from pg_proc where oid = command.objid) then
          ${refuse('function %s cannot be SECURITY DEFINER in a platform database', 'command.object_identity')}
        end if;
      elsif command.classid = 'pg_class'::regclass then
        select c.oid, c.relkind, c.relrowsecurity and c.relforcerowsecurity as secured,
               coalesce((select option_value::boolean from pg_options_to_table(c.reloptions) where option_name = 'security_invoker'), false) as invoker
          into target from pg_class c where c.oid = command.objid;
        if target.relkind = 'm' and command.command_tag = 'CREATE MATERIALIZED VIEW' then
          ${refuse('materialized view %s cannot be created in a platform database', 'command.object_identity')}
        elsif target.relkind = 'v' and not target.invoker then
          if command.command_tag <> 'CREATE VIEW' then
            ${refuse('view %s must keep security_invoker', 'command.object_identity')}
          end if;
          execute format('alter view %s set (security_invoker = true)', target.oid::regclass);
        elsif target.relkind in ('r', 'p') then
          -- A typed table's columns change through ALTER TYPE ... CASCADE, which no table command
          -- reports: it could grow a tenant_id that no trigger ever secured or checked.
          if (select reloftype from pg_class where oid = target.oid) <> 0 then
            ${refuse('table %s cannot be a typed table (OF a composite type) in a platform database', 'target.oid::regclass::text')}
          elsif ${hasUntrustedTenantColumn('target.oid')} then
            ${refuse('column tenant_id of %s must be uuid, text or varchar with a deterministic collation', 'target.oid::regclass::text')}
          elsif ${inheritsAroundRowSecurity('target.oid')} then
            ${refuse('table %s would put a tenant-aware table under an inheritance parent without row-level security', 'target.oid::regclass::text')}
          elsif not target.secured and exists (select from pg_policy where polrelid = target.oid and polname = '${TENANT_POLICY}')${restores ? ` and not ${hasLiveTenantColumn('target.oid')}` : ''} then
            ${refuse('row-level security of tenant-aware table %s cannot be disabled or unforced', 'command.object_identity')}
          end if;
        end if;
      end if;
    end loop;
  end
  $function$;
  revoke all on function platform.refuse_isolation_bypass() from public;
`;
}

/**
 * The guards of step 4. Event triggers fire in alphabetical order of their names: the refusals
 * (deny_...) come before step 2's enforce_tenant_isolation, which re-applies row-level security
 * for a superuser, and the hand-over comes last.
 *   - platform.refuse_isolation_bypass() runs as the caller and aborts, for anyone but a superuser:
 *     policy DDL on a tenant-aware table (the platform's policies are the only ones), turning its
 *     row-level security off or unforcing it, a tenant-aware table under one that is not, a
 *     tenant_id column the policies cannot trust, SECURITY DEFINER functions, materialized views
 *     (they store rows without row-level security, and what a function reads for them is in no
 *     catalog), and views without security_invoker (CREATE VIEW gets it set; altering it away is
 *     refused).
 *   - platform.hand_over_customer_objects() runs as its owner: what a member of the owner role
 *     (an unscoped credential, or the admin role) creates in public is handed to the owner role,
 *     which is subject to row-level security, and its DML granted to the scoped role; so every
 *     credential of the database can use it, and nothing there runs with BYPASSRLS rights.
 */
export const ISOLATION_GUARDS = `${refuseIsolationBypassFunction(false)}
  create function platform.hand_over_customer_objects() returns event_trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    ${ROLE_NAME_DECLARATIONS}
    owner_oid oid := (select oid from pg_roles where rolname = owner_role);
    command record;
    object_owner oid;
    kind "char";
  begin
    for command in
      select distinct classid, objid, object_type, object_identity from pg_event_trigger_ddl_commands()
       where schema_name = 'public' and not in_extension and classid in ('pg_class'::regclass, 'pg_proc'::regclass, 'pg_type'::regclass)
    loop
      kind := (select relkind from pg_class where oid = command.objid and command.classid = 'pg_class'::regclass);
      continue when kind is not null and kind not in ('r', 'p', 'v', 'm', 'S');
      object_owner := case command.classid
        when 'pg_class'::regclass then (select relowner from pg_class where oid = command.objid)
        when 'pg_proc'::regclass then (select proowner from pg_proc where oid = command.objid)
        else (select typowner from pg_type where oid = command.objid) end;
      -- Only what the owner role's members create: the platform's and the tenant role's objects stay theirs.
      continue when object_owner is null
        or not (object_owner = owner_oid or exists (select from pg_auth_members where member = object_owner and roleid = owner_oid));
      -- A sequence owned by a column follows its table.
      if object_owner <> owner_oid and not (kind = 'S' and exists (
           select from pg_depend where classid = 'pg_class'::regclass and objid = command.objid
              and refclassid = 'pg_class'::regclass and deptype in ('a', 'i'))) then
        execute format('alter %s %s owner to %I', command.object_type, command.object_identity, owner_role);
      end if;
      if kind in ('r', 'p', 'v') then
        execute format('grant select, insert, update, delete on %s to %I', command.objid::regclass, scoped_role);
      elsif kind = 'm' then
        execute format('grant select on %s to %I', command.objid::regclass, scoped_role);
      elsif kind = 'S' then
        execute format('grant usage, select on sequence %s to %I', command.objid::regclass, scoped_role);
      end if;
    end loop;
  end
  $function$;
  revoke all on function platform.hand_over_customer_objects() from public;

  create event trigger deny_tenant_isolation_bypass on ddl_command_end
    execute function platform.refuse_isolation_bypass();
  create event trigger deny_tenant_isolation_bypass_on_drop on sql_drop
    execute function platform.refuse_isolation_bypass();
  create event trigger hand_over_customer_objects on ddl_command_end
    when tag in ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'CREATE VIEW', 'CREATE MATERIALIZED VIEW',
                 'CREATE SEQUENCE', 'CREATE FUNCTION', 'CREATE PROCEDURE', 'CREATE AGGREGATE', 'CREATE TYPE', 'CREATE DOMAIN',
                 'ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER SEQUENCE', 'ALTER FUNCTION',
                 'ALTER PROCEDURE', 'ALTER AGGREGATE', 'ALTER TYPE', 'ALTER DOMAIN')
    execute function platform.hand_over_customer_objects();
`;
