import { DATABASE_ROLE_SUFFIXES, MAX_PHYSICAL_NAME_LENGTH, ROLE_NAME_DECLARATIONS } from './database-roles.js';
import { ISOLATION_GUARDS } from './isolation-guards.js';
import { REQUIRED_TENANT_POLICY, TENANT_APP_ROLE, TENANT_CONTEXT_SETTING, TENANT_POLICY, UNTOUCHED_SCHEMAS } from './tenant-context.js';

/** The tenant row-level security compares against: evaluated once per query (an InitPlan), not per row. */
const CURRENT_TENANT = '(select platform.current_tenant_id())';

/** A built-in table's read policies: permissive, and restrictive so that no permissive policy added later widens them. */
function readPolicies(table: string, check: string): string {
  return `
    drop policy ${TENANT_POLICY} on ${table};
    create policy ${TENANT_POLICY} on ${table} for select using (${check});
    create policy ${REQUIRED_TENANT_POLICY} on ${table} as restrictive for select using (${check});`;
}

/**
 * Step 4: isolation that fails closed, per-database roles, and the binding of tenant-scoped
 * credentials. Run by installBuiltInSchema as a superuser.
 *   - Tenant: `platform.current_tenant_id()` answers the tenant bound to the session's login role
 *     (platform.credential_tenants) if any (null once that tenant is deleted, even softly), else
 *     the setting; unset, null, and null matches no row. session_user is the one thing a session
 *     cannot change (SET SESSION AUTHORIZATION needs a superuser), so nothing a bound credential
 *     sends widens its view.
 *   - Roles (database-roles.ts): CONNECT on the database only for owner and scoped, whose members
 *     the credentials are; the tenant role takes over what platform_tenant_app had here.
 *   - Guards (isolation-guards.ts) keep credentials from routing around row-level security.
 */
export const FAIL_CLOSED_ISOLATION = `
  do $check$
  begin
    -- The role names append a suffix: they must stay whole, unquoted-safe identifiers.
    if length(current_database()) > ${MAX_PHYSICAL_NAME_LENGTH} or current_database() !~ '^[a-z_][a-z0-9_]*$' then
      raise exception 'database name % cannot carry per-database role names', current_database();
    end if;
  end
  $check$;

  create table platform.credential_tenants (
    role_name name primary key,
    tenant_id uuid not null references public.tenants (id) on delete cascade
  );
  create index credential_tenants_tenant on platform.credential_tenants (tenant_id);

  create function platform.current_tenant_id() returns uuid
    language plpgsql stable parallel safe security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    binding record;
  begin
    select b.tenant_id, t.id is not null and t.deleted is null as live into binding
      from platform.credential_tenants b left join public.tenants t on t.id = b.tenant_id
     where b.role_name = session_user;
    -- The platform deletes tenants softly: a bound session of a deleted tenant sees nothing.
    if found then
      return case when binding.live then binding.tenant_id end;
    end if;
    -- A scoped credential whose binding is gone (its tenant was deleted) sees nothing, never what it sets.
    if exists (select from pg_auth_members m
                where m.roleid = (select oid from pg_roles where rolname = current_database() || '${DATABASE_ROLE_SUFFIXES.scoped}')
                  and m.member = (select oid from pg_roles where rolname = session_user)) then
      return null;
    end if;
    return nullif(current_setting('${TENANT_CONTEXT_SETTING}', true), '')::uuid;
  end
  $function$;
  revoke all on function platform.current_tenant_id() from public;

  -- Cluster-wide, but named after this database, whose installs wait for each other; the handler
  -- covers a role left behind by an earlier database of the same name. Attributes are (re)set
  -- every time: isolation rests on them.
  do $roles$
  declare
    role record;
  begin
    for role in
      select current_database() || suffix as name, suffix = '${DATABASE_ROLE_SUFFIXES.admin}' as bypass
        from unnest(array['${Object.values(DATABASE_ROLE_SUFFIXES).join("', '")}']) as suffix
    loop
      begin
        execute format('create role %I nologin', role.name);
      exception when duplicate_object or unique_violation then
        null;
      end;
      execute format('alter role %I nologin nosuperuser nocreatedb nocreaterole noreplication %s',
        role.name, case when role.bypass then 'bypassrls' else 'nobypassrls' end);
    end loop;
  end
  $roles$;

  do $grants$
  declare
    ${ROLE_NAME_DECLARATIONS}
    relation regclass;
  begin
    execute format('revoke connect, temporary on database %I from public', current_database());
    execute format('grant connect on database %I to %I, %I', current_database(), owner_role, scoped_role);
    -- Administration reaches the customer's objects through the owner's privileges.
    execute format('grant %I to %I', owner_role, admin_role);
    execute format('grant usage, create on schema public to %I, %I', owner_role, tenant_role);
    execute format('grant usage on schema public to %I', scoped_role);
    execute format('grant usage on schema users to %I, %I, %I', owner_role, tenant_role, scoped_role);
    execute format('grant select, references on public.tenants to %I, %I', owner_role, tenant_role);
    execute format('grant select on public.tenants to %I', scoped_role);
    execute format('grant select on users.users, users.tenant_users to %I, %I, %I', owner_role, tenant_role, scoped_role);
    execute format('grant execute on function platform.current_tenant_id() to %I, %I, %I, %I', owner_role, tenant_role, admin_role, scoped_role);

    -- The cluster-wide role of steps 2 and 3 keeps nothing here; what it created is the customer's.
    if exists (select from pg_roles where rolname = '${TENANT_APP_ROLE}') then
      execute format('reassign owned by ${TENANT_APP_ROLE} to %I', owner_role);
      drop owned by ${TENANT_APP_ROLE};
    end if;
    for relation in
      select c.oid from pg_class c
       where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v')
         and c.relowner = (select oid from pg_roles where rolname = owner_role)
    loop
      execute format('grant select, insert, update, delete on %s to %I', relation, scoped_role);
    end loop;
  end
  $grants$;

  -- Makes a table tenant-aware (see step 2 for which), with the policies on current_tenant_id();
  -- replace: first drop policies of those names, i.e. the ones of earlier steps.
  create function platform.secure_tenant_table(relation oid, replace boolean) returns void
    language plpgsql
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    target record;
    tenant_check text;
  begin
    select format('%I.%I', n.nspname, c.relname) as name, c.relrowsecurity and c.relforcerowsecurity as secured,
           case when a.atttypid = 'uuid'::regtype then 'tenant_id = ${CURRENT_TENANT}'
                else 'tenant_id::text = ${CURRENT_TENANT}::text' end as tenant_check
      into target
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
     where c.oid = relation and c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS};
    if not found then
      return;
    end if;
    if replace then
      execute format('drop policy if exists ${TENANT_POLICY} on %s', target.name);
      execute format('drop policy if exists ${REQUIRED_TENANT_POLICY} on %s', target.name);
    end if;
    if not exists (select from pg_policy where polrelid = relation and polname = '${TENANT_POLICY}') then
      execute format('create policy ${TENANT_POLICY} on %s using (%s) with check (%s)', target.name, target.tenant_check, target.tenant_check);
    end if;
    if not exists (select from pg_policy where polrelid = relation and polname = '${REQUIRED_TENANT_POLICY}') then
      execute format('create policy ${REQUIRED_TENANT_POLICY} on %s as restrictive using (%s) with check (%s)',
        target.name, target.tenant_check, target.tenant_check);
    end if;
    if not target.secured then
      execute format('alter table %s enable row level security, force row level security', target.name);
    end if;
  end
  $function$;
  revoke all on function platform.secure_tenant_table(oid, boolean) from public;

  -- Step 2's trigger function, now as its owner (a superuser): the policies name a function of
  -- the platform schema, which the credential whose DDL fired it may not look up.
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
        select objid from pg_event_trigger_ddl_commands() where classid = 'pg_class'::regclass
        union
        select i.inhrelid from touched join pg_inherits i on i.inhparent = touched.relid
      )
      select relid from touched
    loop
      perform platform.secure_tenant_table(relation.relid, false);
    end loop;
  end
  $function$;

  do $existing$
  declare
    existing record;
  begin
    for existing in
      select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS}
    loop
      perform platform.secure_tenant_table(existing.oid, true);
    end loop;
  end
  $existing$;

  ${readPolicies('public.tenants', `id = ${CURRENT_TENANT}`)}
  ${readPolicies('users.users', `exists (select 1 from users.tenant_users tu where tu.user_id = users.id and tu.tenant_id = ${CURRENT_TENANT})`)}

  ${ISOLATION_GUARDS}
`;
