import { DATABASE_ROLE_SUFFIXES } from './database-roles.js';
import { REQUIRED_TENANT_POLICY, TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, TENANT_POLICY, UNTOUCHED_SCHEMAS, USER_CONTEXT_SETTING } from './tenant-context.js';
import {
  CURRENT_TENANT,
  REQUIRED_UNSCOPED_TENANT_POLICY,
  ROLES,
  sessionIsMemberOf,
  settingValue,
  UNSCOPED_TENANT_POLICY,
  unscopedCheck,
} from './tenant-context-sql.js';
import { TENANT_ROW_GUARD_FUNCTIONS } from './tenant-row-guard.js';

export { REQUIRED_UNSCOPED_TENANT_POLICY, TENANT_ROW_GUARD_TRIGGER, UNSCOPED_TENANT_POLICY } from './tenant-context-sql.js';

/**
 * Step 12: the tenant model of the API family over SQL, for unscoped credentials.
 *   - Context: `nile.tenant_id` (TENANT_CONTEXT_ALIAS) or `platform.tenant_id`, however set (SET,
 *     SET LOCAL, set_config, startup options); empty is unset. A value that is not a uuid, two
 *     names that disagree, a tenant that is not live, or a `nile.user_id` that is not a member of
 *     the tenant: an error naming the setting, raised when a query first reads a tenant-aware
 *     table (PostgreSQL has no hook on SET for settings it does not define).
 *   - An unscoped credential (session_user a member of `<db>_owner`, neither scoped nor bound)
 *     without a context sees and writes every tenant's rows; in a context, that tenant's only, and
 *     a row trigger refuses a row of another tenant with a message that names the setting (before
 *     row-level security's generic one) and gives a row without tenant_id the context's tenant.
 *   - The policies of steps 2 to 4 now bind `<db>_tenant` and `<db>_scoped` only: the API's
 *     tenant role still sees nothing without its setting, scoped credentials stay pinned. The
 *     unscoped credentials' own pair binds `<db>_owner`. A role in neither list sees no row.
 *   - `tenants` takes INSERT (id, name), UPDATE (name) and DELETE (hard; memberships and
 *     scoped credentials' bindings go with it) from unscoped credentials, outside a context; in one,
 *     only its row is visible and its name may be updated. `users.tenant_users` gains the API
 *     family's columns (email, updated, deleted) and takes memberships from unscoped credentials.
 *     `users.users` stays read-only over SQL; `auth` stays unreadable.
 * Runs as a superuser on databases that may hold customer objects: every built-in is qualified.
 */
export const TENANT_CONTEXT_STEP = `
  -- Is session_user a member, by a grant, of the database's role with this suffix. A superuser is a
  -- member of every role, and not by a grant. pg_has_role reads PostgreSQL's cached memberships, so
  -- the catalog is asked only for a member or a superuser: row triggers call this, and the lookups
  -- through pg_roles that step 4 made cost 140 µs a call.
  create function platform.session_is_member(suffix text) returns boolean
    language plpgsql stable
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    role_name text := pg_catalog.current_database() || suffix;
    role_oid oid;
    me oid;
  begin
    if not pg_catalog.pg_has_role(session_user, role_name, 'MEMBER') then
      return false;
    end if;
    role_oid := pg_catalog.to_regrole(pg_catalog.quote_ident(role_name));
    me := pg_catalog.to_regrole(pg_catalog.quote_ident(session_user));
    return exists (select from pg_catalog.pg_auth_members where roleid = role_oid and member = me);
  end
  $function$;
  revoke all on function platform.session_is_member(text) from public;

  -- A setting's value as a tenant or user id, or an error naming the setting.
  create function platform.context_uuid(setting text, value text) returns uuid
    language plpgsql immutable
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    if value is null then
      return null;
    end if;
    if not pg_catalog.pg_input_is_valid(value, 'uuid') then
      raise exception using
        errcode = 'invalid_parameter_value',
        message = pg_catalog.format('invalid value for parameter "%s": "%s"', setting, value),
        hint = case when setting = '${USER_CONTEXT_SETTING}' then 'A user id is a UUID.' else 'A tenant id is a UUID.' end;
    end if;
    return value::uuid;
  end
  $function$;
  revoke all on function platform.context_uuid(text, text) from public;

  -- The names that set the tenant context now, for messages ('nile.tenant_id', 'platform.tenant_id', or both); NULL for none.
  create function platform.tenant_context_names() returns text
    language sql stable
    set search_path = pg_catalog, pg_temp
  as $function$
    select case
      when ${settingValue(TENANT_CONTEXT_ALIAS)} is not null and ${settingValue(TENANT_CONTEXT_SETTING)} is not null
        then '${TENANT_CONTEXT_ALIAS} and ${TENANT_CONTEXT_SETTING}'
      when ${settingValue(TENANT_CONTEXT_ALIAS)} is not null then '${TENANT_CONTEXT_ALIAS}'
      when ${settingValue(TENANT_CONTEXT_SETTING)} is not null then '${TENANT_CONTEXT_SETTING}'
    end
  $function$;
  revoke all on function platform.tenant_context_names() from public;

  -- The tenant context an unscoped credential has set, by either name; NULL for none.
  create function platform.tenant_context() returns uuid
    language plpgsql stable
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    alias_id uuid := platform.context_uuid('${TENANT_CONTEXT_ALIAS}', ${settingValue(TENANT_CONTEXT_ALIAS)});
    setting_id uuid := platform.context_uuid('${TENANT_CONTEXT_SETTING}', ${settingValue(TENANT_CONTEXT_SETTING)});
  begin
    if alias_id <> setting_id then
      raise exception using
        errcode = 'invalid_parameter_value',
        message = pg_catalog.format('${TENANT_CONTEXT_ALIAS} ("%s") and ${TENANT_CONTEXT_SETTING} ("%s") name different tenants', alias_id, setting_id),
        detail = 'Both settings name the tenant context; when both are set they must agree.',
        hint = 'Set one of them and RESET the other.';
    end if;
    return coalesce(alias_id, setting_id);
  end
  $function$;
  revoke all on function platform.tenant_context() from public;

  -- Is the session an unscoped credential's (or the move's restoring login's): a member of the
  -- owner role, never of the scoped role (bound credentials are its members). A superuser is a
  -- member of both, so it is not; nor are the API's service role or scoped credentials. Cached
  -- memberships only: the row trigger below may call it for every row.
  create function platform.is_unscoped_session() returns boolean
    language plpgsql stable
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    return pg_catalog.pg_has_role(session_user, pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.owner}', 'MEMBER')
       and not pg_catalog.pg_has_role(session_user, pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.scoped}', 'MEMBER');
  end
  $function$;
  revoke all on function platform.is_unscoped_session() from public;

  -- An unscoped credential with no tenant context: it sees and writes every tenant's rows.
  create function platform.sees_all_tenants() returns boolean
    language plpgsql stable parallel safe security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    return platform.is_unscoped_session() and platform.tenant_context() is null;
  end
  $function$;
  revoke all on function platform.sees_all_tenants() from public;

  -- Step 4's function; an unscoped credential's context is now either name, checked.
  create or replace function platform.current_tenant_id() returns uuid
    language plpgsql stable parallel safe security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    binding record;
    tenant uuid;
    member uuid;
  begin
    select b.tenant_id, t.id is not null and t.deleted is null as live into binding
      from platform.credential_tenants b left join public.tenants t on t.id = b.tenant_id
     where b.role_name = session_user;
    -- A bound session of a deleted tenant sees nothing.
    if found then
      return case when binding.live then binding.tenant_id end;
    end if;
    -- A scoped credential whose binding is gone (its tenant was deleted) sees nothing, never what it sets.
    if ${sessionIsMemberOf(DATABASE_ROLE_SUFFIXES.scoped)} then
      return null;
    end if;
    -- The API's sessions (its tenant role) and any other: the platform's setting alone, as in step 4.
    if not platform.is_unscoped_session() then
      return ${settingValue(TENANT_CONTEXT_SETTING)}::uuid;
    end if;
    tenant := platform.tenant_context();
    if tenant is null then
      return null;
    end if;
    if not exists (select from public.tenants t where t.id = tenant and t.deleted is null) then
      raise exception using
        errcode = 'invalid_parameter_value',
        message = pg_catalog.format('tenant "%s" does not exist', tenant),
        detail = pg_catalog.format('%s names no live tenant of this database.', platform.tenant_context_names()),
        hint = 'Create the tenant first (INSERT INTO tenants), or RESET the setting to work across tenants.';
    end if;
    member := platform.context_uuid('${USER_CONTEXT_SETTING}', ${settingValue(USER_CONTEXT_SETTING)});
    if member is not null and not exists (
         select from users.tenant_users tu join users.users u on u.id = tu.user_id
          where tu.tenant_id = tenant and tu.user_id = member and tu.deleted is null and u.deleted is null) then
      raise exception using
        errcode = 'insufficient_privilege',
        message = pg_catalog.format('user "%s" is not a member of tenant "%s"', member, tenant),
        detail = pg_catalog.format('${USER_CONTEXT_SETTING} names the user of the session; %s names its tenant.', platform.tenant_context_names()),
        hint = 'Add the user to the tenant (users.tenant_users), or RESET ${USER_CONTEXT_SETTING}.';
    end if;
    return tenant;
  end
  $function$;
${TENANT_ROW_GUARD_FUNCTIONS}

  -- Step 10's refusal of TRUNCATE, with a context set by either name; otherwise as it was.
  create or replace function platform.refuse_tenant_truncate() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    if platform.tenant_context_names() is not null or ${sessionIsMemberOf(DATABASE_ROLE_SUFFIXES.scoped)} then
      raise exception using
        errcode = 'insufficient_privilege',
        message = pg_catalog.format('TRUNCATE of tenant-aware table %I.%I is refused to a tenant-scoped credential or in a tenant context: it ignores row-level security and would empty every tenant', tg_table_schema, tg_table_name),
        hint = 'DELETE the tenant''s rows instead.';
    end if;
    return null;
  end
  $function$;

  -- Step 10's trigger function, opening tables to unscoped credentials too; otherwise as it was.
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
      perform platform.open_tenant_table(relation.relid);
    end loop;
  end
  $function$;

  -- The API family's columns of memberships: the member's email (kept with the user's), and the
  -- bookkeeping pair. The platform removes a membership by deleting its row: deleted stays NULL.
  alter table users.tenant_users
    add column email text,
    add column updated timestamptz not null default pg_catalog.now(),
    add column deleted timestamptz;
  update users.tenant_users tu set email = u.email from users.users u where u.id = tu.user_id;
  create or replace function platform.tenant_users_user_created() returns trigger
    language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $function$
  begin
    select u.created, u.email into new.user_created, new.email from users.users u where u.id = new.user_id;
    return new;
  end
  $function$;
  create function platform.tenant_users_follow_email() returns trigger
    language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $function$
  begin
    update users.tenant_users set email = new.email where user_id = new.id;
    return null;
  end
  $function$;
  revoke all on function platform.tenant_users_follow_email() from public;
  create trigger tenant_users_follow_email after update of email on users.users
    for each row when (old.email is distinct from new.email) execute function platform.tenant_users_follow_email();

  -- updated follows a change made without setting it (the API sets it itself).
  create function platform.touch_updated() returns trigger
    language plpgsql
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    if new.updated is not distinct from old.updated then
      new.updated := pg_catalog.now();
    end if;
    return new;
  end
  $function$;
  revoke all on function platform.touch_updated() from public;
  create trigger tenants_touch_updated before update on public.tenants for each row execute function platform.touch_updated();
  create trigger tenant_users_touch_updated before update on users.tenant_users for each row execute function platform.touch_updated();

  -- Inside a tenant context an unscoped credential neither creates nor deletes tenants.
  create function platform.refuse_tenants_write_in_context() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  begin
    if platform.tenant_context_names() is not null and platform.is_unscoped_session() then
      raise exception using
        errcode = 'insufficient_privilege',
        message = pg_catalog.format('%s on tenants is refused in a tenant context', tg_op),
        detail = pg_catalog.format('%s sets the tenant context: in it, only that tenant is visible, and only its name may change.', platform.tenant_context_names()),
        hint = 'RESET ${TENANT_CONTEXT_ALIAS} (and ${TENANT_CONTEXT_SETTING}) to create or delete tenants.';
    end if;
    return null;
  end
  $function$;
  revoke all on function platform.refuse_tenants_write_in_context() from public;
  create trigger tenants_context_guard before insert or delete on public.tenants
    for each statement execute function platform.refuse_tenants_write_in_context();

  do $open$
  declare
    ${ROLES}
    existing record;
    tenants_check text := '${unscopedCheck(`id = ${CURRENT_TENANT}`)}';
    users_check text := '${unscopedCheck(`exists (select 1 from users.tenant_users tu where tu.user_id = users.id and tu.tenant_id = ${CURRENT_TENANT})`)}';
  begin
    execute pg_catalog.format('grant execute on function platform.sees_all_tenants() to %I', owner_role);
    execute pg_catalog.format('grant insert (id, name), update (name), delete on public.tenants to %I', owner_role);
    execute pg_catalog.format('grant insert (tenant_id, user_id, roles), update (roles), delete on users.tenant_users to %I', owner_role);

    -- The built-in tables' read policies of step 4 bind the API's tenant role and scoped credentials;
    -- unscoped credentials get their own.
    execute pg_catalog.format('alter policy ${TENANT_POLICY} on public.tenants to %I, %I', tenant_role, scoped_role);
    execute pg_catalog.format('alter policy ${REQUIRED_TENANT_POLICY} on public.tenants to %I, %I', tenant_role, scoped_role);
    execute pg_catalog.format('create policy ${UNSCOPED_TENANT_POLICY} on public.tenants to %I using (%s) with check (%s)', owner_role, tenants_check, tenants_check);
    execute pg_catalog.format('create policy ${REQUIRED_UNSCOPED_TENANT_POLICY} on public.tenants as restrictive to %I using (%s) with check (%s)', owner_role, tenants_check, tenants_check);
    execute pg_catalog.format('alter policy ${TENANT_POLICY} on users.users to %I, %I', tenant_role, scoped_role);
    execute pg_catalog.format('alter policy ${REQUIRED_TENANT_POLICY} on users.users to %I, %I', tenant_role, scoped_role);
    execute pg_catalog.format('create policy ${UNSCOPED_TENANT_POLICY} on users.users for select to %I using (%s)', owner_role, users_check);
    execute pg_catalog.format('create policy ${REQUIRED_UNSCOPED_TENANT_POLICY} on users.users as restrictive for select to %I using (%s)', owner_role, users_check);

    -- Every tenant-aware table there is, users.tenant_users among them.
    for existing in
      select c.oid from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS}
    loop
      perform platform.open_tenant_table(existing.oid);
    end loop;
  end
  $open$;
`;

