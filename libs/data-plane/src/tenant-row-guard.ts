import { REQUIRED_TENANT_POLICY, TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, TENANT_POLICY, UNTOUCHED_SCHEMAS } from './tenant-context.js';
import {
  CURRENT_TENANT,
  REQUIRED_UNSCOPED_TENANT_POLICY,
  ROLES,
  settingValue,
  TENANT_ROW_GUARD_TRIGGER,
  UNSCOPED_TENANT_POLICY,
  unscopedCheck,
} from './tenant-context-sql.js';

/**
 * Part of step 12 (tenant-context-step.ts): the row guard of tenant-aware tables, and the function
 * that gives a table its unscoped credentials' policies and that guard. Runs as a superuser on
 * databases that may hold customer objects: every built-in is qualified.
 */
export const TENANT_ROW_GUARD_FUNCTIONS = `
  -- Before row-level security's generic refusal: a row of another tenant in an unscoped
  -- credential's context is refused in words that name the setting; a row without tenant_id gets
  -- the context's tenant. Other sessions (scoped credentials, the API) are left to row-level security.
  -- It runs as its owner, a superuser, so it touches a tenant_id only of a built-in type (uuid,
  -- text, varchar), whose casts are the system's: a type of the customer's own (a composite type
  -- with a cast to text they wrote) would run their cast as the superuser. The isolation guards
  -- refuse such columns already (isolation-guards.ts); this keeps the trigger safe on its own.
  create function platform.guard_tenant_row() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    alias_value text := pg_catalog.lower(${settingValue(TENANT_CONTEXT_ALIAS)});
    setting_value text := pg_catalog.lower(${settingValue(TENANT_CONTEXT_SETTING)});
    tenant uuid;
  begin
    -- pg_typeof reads the declared type: nothing of the value's type runs.
    if alias_value is null and setting_value is null
       or pg_catalog.pg_typeof(new.tenant_id) not in ('pg_catalog.uuid'::pg_catalog.regtype, 'pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype) then
      return new;
    end if;
    -- A row of the context's own tenant, as the setting spells it: row-level security's to check
    -- (and the context's, once per statement); a bulk insert in a context pays nothing more per row.
    if new.tenant_id::text = coalesce(alias_value, setting_value) and (alias_value is null or setting_value is null or alias_value = setting_value) then
      return new;
    end if;
    if not platform.is_unscoped_session() then
      return new;
    end if;
    -- The context as the settings give it (a value that is not a uuid, or two that disagree, fail
    -- here); that the tenant is live is checked once per statement by the policies' WITH CHECK.
    tenant := platform.tenant_context();
    if new.tenant_id is null then
      new.tenant_id := tenant;
    elsif new.tenant_id::text <> tenant::text then
      -- On the way to an error: the context's own errors (no such tenant, a user not a member) first.
      perform platform.current_tenant_id();
      raise exception using
        errcode = 'insufficient_privilege',
        message = pg_catalog.format('row of tenant "%s" is outside the tenant context "%s" (table %I.%I)', new.tenant_id, tenant, tg_table_schema, tg_table_name),
        detail = pg_catalog.format('%s sets the tenant context: rows of other tenants cannot be written in it.', platform.tenant_context_names()),
        hint = 'Write the row in its own tenant''s context, or RESET ${TENANT_CONTEXT_ALIAS} (and ${TENANT_CONTEXT_SETTING}) to write rows of any tenant.';
    end if;
    return new;
  end
  $function$;
  revoke all on function platform.guard_tenant_row() from public;

  -- Gives a tenant-aware table (as step 4 decides which) the unscoped credentials' policies, the
  -- row guard, and binds the earlier policies to the API's tenant role and scoped credentials.
  create function platform.open_tenant_table(relation oid) returns void
    language plpgsql
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    ${ROLES}
    target record;
    earlier record;
    unscoped_check text;
  begin
    select pg_catalog.format('%I.%I', n.nspname, c.relname) as name, c.relkind = 'p' as partitioned,
           case when a.atttypid = 'pg_catalog.uuid'::pg_catalog.regtype then 'tenant_id = ${CURRENT_TENANT}'
                else 'tenant_id::text = ${CURRENT_TENANT}::text' end as tenant_check
      into target
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
     where c.oid = relation and c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS};
    if not found then
      return;
    end if;
    unscoped_check := '${unscopedCheck('')}' || target.tenant_check;
    for earlier in select polname from pg_catalog.pg_policy where polrelid = relation and polname in ('${TENANT_POLICY}', '${REQUIRED_TENANT_POLICY}') loop
      execute pg_catalog.format('alter policy %I on %s to %I, %I', earlier.polname, target.name, tenant_role, scoped_role);
    end loop;
    if not exists (select from pg_catalog.pg_policy where polrelid = relation and polname = '${UNSCOPED_TENANT_POLICY}') then
      execute pg_catalog.format('create policy ${UNSCOPED_TENANT_POLICY} on %s to %I using (%s) with check (%s)',
        target.name, owner_role, unscoped_check, unscoped_check);
    end if;
    if not exists (select from pg_catalog.pg_policy where polrelid = relation and polname = '${REQUIRED_UNSCOPED_TENANT_POLICY}') then
      execute pg_catalog.format('create policy ${REQUIRED_UNSCOPED_TENANT_POLICY} on %s as restrictive to %I using (%s) with check (%s)',
        target.name, owner_role, unscoped_check, unscoped_check);
    end if;
    -- On each table that holds rows, partitions included, never on a partitioned table: PostgreSQL
    -- would clone it to the partitions, and attaching a table that has its own would fail.
    if not target.partitioned and not exists (select from pg_catalog.pg_trigger where tgrelid = relation and tgname = '${TENANT_ROW_GUARD_TRIGGER}') then
      execute pg_catalog.format('create trigger ${TENANT_ROW_GUARD_TRIGGER} before insert or update of tenant_id on %s for each row execute function platform.guard_tenant_row()',
        target.name);
    end if;
  end
  $function$;
  revoke all on function platform.open_tenant_table(oid) from public;`;
