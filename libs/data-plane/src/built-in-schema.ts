import { FAIL_CLOSED_ISOLATION } from './isolation-step.js';
import { SERVICE_ROLE_STEP, SERVICE_ROLE_SUFFIX } from './service-role.js';
import { SCHEMAS_AND_EXTENSIONS_STEP } from './schemas-extensions-step.js';
import { TENANT_CONTEXT_STEP } from './tenant-context-step.js';
import { RESTORE_ISOLATION_STEP } from './restore-isolation-step.js';
import { ONE_TIME_TOKENS_STEP } from './one-time-tokens-step.js';
import { READ_ONLY_SHARED_TABLES_STEP, TRUNCATE_GUARD_STEP } from './write-guard-steps.js';
import { TENANT_APP_ROLE, TENANT_CONTEXT_SETTING, TENANT_POLICY, UNTOUCHED_SCHEMAS } from './tenant-context.js';

// Both names are spliced into SQL text below: refuse anything that would need quoting.
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(TENANT_APP_ROLE)) throw new Error(`unexpected tenant role name '${TENANT_APP_ROLE}'`);
if (!/^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/.test(TENANT_CONTEXT_SETTING)) {
  throw new Error(`unexpected tenant setting name '${TENANT_CONTEXT_SETTING}'`);
}

/** The current tenant as text; NULL when the setting is unset or empty (missing_ok: never an error). */
const CURRENT_TENANT = `nullif(current_setting('${TENANT_CONTEXT_SETTING}', true), '')`;
/**
 * The policy's USING and WITH CHECK expressions. A uuid column is compared as uuid (letter case
 * does not matter, and a setting that is not a uuid fails with 22P02 instead of matching nothing);
 * any other type as text. Because of the `is null` arm the policy alone cannot use an index on
 * tenant_id: queries should still filter on tenant_id themselves.
 */
const UUID_TENANT_CHECK = `${CURRENT_TENANT} is null or tenant_id = ${CURRENT_TENANT}::uuid`;
const TEXT_TENANT_CHECK = `${CURRENT_TENANT} is null or tenant_id::text = ${CURRENT_TENANT}`;

/**
 * PL/pgSQL statements that make the table whose oid is in `relation` tenant-aware, if it is an
 * ordinary (or partitioned) table outside the untouched schemas with a live `tenant_id` column:
 * the policy first, then RLS enabled and forced (so the owner is subject to it too), each only when
 * missing. The ALTER TABLE below fires the event trigger again, within this call: the policy is
 * created first, so that nested call finds nothing left to do; and whatever could have changed in
 * between is checked right before it is changed, never from a state read earlier.
 */
function secureTableStatements(relation: string): string {
  return `
    select n.nspname, c.relname, c.relrowsecurity, c.relforcerowsecurity, a.atttypid = 'uuid'::regtype::oid as is_uuid
      into target
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
     where c.oid = ${relation}
       and c.relkind in ('r', 'p')
       and n.nspname not in ${UNTOUCHED_SCHEMAS};
    if found then
      if not exists (select from pg_policy where polrelid = ${relation} and polname = '${TENANT_POLICY}') then
        execute format('create policy ${TENANT_POLICY} on %I.%I using (%s) with check (%s)',
          target.nspname, target.relname,
          case when target.is_uuid then $check$${UUID_TENANT_CHECK}$check$ else $check$${TEXT_TENANT_CHECK}$check$ end,
          case when target.is_uuid then $check$${UUID_TENANT_CHECK}$check$ else $check$${TEXT_TENANT_CHECK}$check$ end);
      end if;
      if not (target.relrowsecurity and target.relforcerowsecurity) then
        execute format('alter table %I.%I enable row level security, force row level security', target.nspname, target.relname);
      end if;
    end if;`;
}

/**
 * The tables every platform database starts with, as ordered steps. Each database records the
 * steps it has in `platform.schema_steps`, so a later release adds a step and
 * `installBuiltInSchema` (which the provisioner runs) brings older databases up to date. Never
 * edit a released step; add one.
 */
export const BUILT_IN_SCHEMA_STEPS: readonly { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      create table public.tenants (
        id uuid primary key default gen_random_uuid(),
        name text,
        created timestamptz not null default now(),
        updated timestamptz not null default now(),
        deleted timestamptz
      );

      create schema users;
      create table users.users (
        id uuid primary key default gen_random_uuid(),
        email text not null,
        name text,
        given_name text,
        family_name text,
        picture text,
        email_verified timestamptz,
        created timestamptz not null default now(),
        updated timestamptz not null default now(),
        deleted timestamptz
      );
      create unique index users_email_live on users.users (lower(email)) where deleted is null;
      create table users.tenant_users (
        tenant_id uuid not null references public.tenants (id) on delete cascade,
        user_id uuid not null references users.users (id) on delete cascade,
        roles text[] not null default '{}',
        created timestamptz not null default now(),
        primary key (tenant_id, user_id)
      );
      create index tenant_users_user on users.tenant_users (user_id);

      -- Secrets live apart: customer credentials get no privilege on this schema.
      create schema auth;
      revoke all on schema auth from public;
      create table auth.credentials (
        user_id uuid primary key references users.users (id) on delete cascade,
        method text not null,
        secret text not null,
        created timestamptz not null default now(),
        updated timestamptz not null default now()
      );
      create table auth.sessions (
        id text primary key,
        user_id uuid not null references users.users (id) on delete cascade,
        created timestamptz not null default now(),
        expires timestamptz not null,
        revoked timestamptz
      );
      create index sessions_user on auth.sessions (user_id);
    `,
  },
  {
    /*
     * Tenant isolation. The setting `platform.tenant_id` (TENANT_CONTEXT_SETTING) carries the
     * current tenant's id; set it per transaction (`select set_config('platform.tenant_id', $1,
     * true)`, i.e. SET LOCAL, so it never outlives the transaction on a pooled connection). Every
     * table with a `tenant_id` column, outside the auth and platform schemas, gets row-level
     * security, enabled and forced (so its owner is subject too), with the policy
     * `tenant_isolation`:
     *   - setting unset or empty: every row is visible and writable (administration);
     *   - setting set: only rows whose tenant_id equals it are visible, updated or deleted, and a
     *     row written (insert or update) must carry it, or the statement fails with 42501.
     * Superusers and BYPASSRLS roles are never subject to RLS: queries meant to be isolated run as
     * `platform_tenant_app` (TENANT_APP_ROLE, via SET LOCAL ROLE), a cluster-wide role with
     * neither. An event trigger applies this to tables created or altered later, whoever runs the
     * DDL: its function runs with the caller's rights, which suffice, since only a table's owner
     * (or a superuser) can create or alter it. The loop at the end covers the tables that exist.
     */
    version: 2,
    sql: `
      -- Cluster-wide, so another database may have created it; two may be provisioned at once,
      -- and the loser of that race gets unique_violation when the winner commits.
      do $role$
      begin
        if not exists (select from pg_roles where rolname = '${TENANT_APP_ROLE}') then
          create role ${TENANT_APP_ROLE} nologin nosuperuser nobypassrls nocreatedb nocreaterole;
        end if;
      exception when duplicate_object or unique_violation then
        null;
      end
      $role$;
      -- Isolation rests on these two attributes: put them back if someone changed them.
      do $role$
      begin
        if exists (select from pg_roles where rolname = '${TENANT_APP_ROLE}' and (rolsuper or rolbypassrls)) then
          alter role ${TENANT_APP_ROLE} nosuperuser nobypassrls;
        end if;
      end
      $role$;

      grant usage, create on schema public to ${TENANT_APP_ROLE};
      grant usage on schema users to ${TENANT_APP_ROLE};
      grant select, references on public.tenants to ${TENANT_APP_ROLE};
      grant select on users.users, users.tenant_users to ${TENANT_APP_ROLE};
      revoke all on all tables in schema auth, platform from ${TENANT_APP_ROLE};
      revoke all on all sequences in schema auth, platform from ${TENANT_APP_ROLE};
      revoke all on schema auth, platform from ${TENANT_APP_ROLE};

      create function platform.enforce_tenant_isolation() returns event_trigger
        language plpgsql
        -- Runs with the caller's rights: pin the search path so no object of theirs is picked up.
        set search_path = pg_catalog, pg_temp
      as $function$
      declare
        command record;
        target record;
      begin
        for command in
          select distinct objid from pg_event_trigger_ddl_commands() where classid = 'pg_class'::regclass
        loop
          ${secureTableStatements('command.objid')}
        end loop;
      end
      $function$;
      revoke all on function platform.enforce_tenant_isolation() from public;
      comment on function platform.enforce_tenant_isolation() is
        'Gives tables with a tenant_id column row-level security on the setting ${TENANT_CONTEXT_SETTING}';

      create event trigger enforce_tenant_isolation on ddl_command_end
        when tag in ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE')
        execute function platform.enforce_tenant_isolation();

      -- The tables that already exist (users.tenant_users among them, and any customer table of a
      -- database upgraded from step 1).
      do $existing$
      declare
        existing record;
        target record;
      begin
        for existing in
          select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where c.relkind in ('r', 'p') and n.nspname not in ${UNTOUCHED_SCHEMAS}
        loop
          ${secureTableStatements('existing.oid')}
        end loop;
      end
      $existing$;
    `,
  },
  {
    // Step 3: the built-in tables the role may read follow the tenant context too: in a tenant's
    // context it sees that tenant and its members only, not every tenant and user of the database.
    // (The platform's own queries run as the owner, which row-level security does not bind.)
    version: 3,
    sql: `
      alter table public.tenants enable row level security;
      create policy ${TENANT_POLICY} on public.tenants for select
        using (${CURRENT_TENANT} is null or id = ${CURRENT_TENANT}::uuid);
      alter table users.users enable row level security;
      create policy ${TENANT_POLICY} on users.users for select
        using (${CURRENT_TENANT} is null or exists (
          select 1 from users.tenant_users tu where tu.user_id = users.id and tu.tenant_id = ${CURRENT_TENANT}::uuid));
    `,
  },
  {
    // Step 4: isolation fails closed (no tenant, no rows), per-database roles instead of the
    // cluster-wide one, tenant-scoped credentials bound to their tenant by login role, and guards
    // against routes around row-level security (see isolation-step.ts and isolation-guards.ts).
    version: 4,
    sql: FAIL_CLOSED_ISOLATION,
  },
  {
    // Step 5: the API reaches the database as its service role instead of the cluster's superuser.
    version: 5,
    sql: SERVICE_ROLE_STEP,
  },
  {
    // Step 6: single sign-on. A user's accounts at OpenID Providers, one row per (issuer, subject):
    // that pair, never the email, says who signs in. In the auth schema, which customer
    // credentials cannot read; the service role gets what it has on the other auth tables.
    version: 6,
    sql: `
      create table auth.identities (
        issuer text not null,
        subject text not null,
        user_id uuid not null references users.users (id) on delete cascade,
        created timestamptz not null default pg_catalog.now(),
        primary key (issuer, subject)
      );
      create index identities_user on auth.identities (user_id);
      do $grant$
      begin
        execute pg_catalog.format('grant select, insert, update, delete on auth.identities to %I',
          pg_catalog.current_database() || '${SERVICE_ROLE_SUFFIX}');
      end
      $grant$;
    `,
  },
  {
    // Step 7: lists page in (created, id) order (keyset): indexes that give that order without a
    // sort of every row. Built inside the step's transaction: a short write lock on each table.
    version: 7,
    sql: `
      create index tenants_created_id on public.tenants (created, id) where deleted is null;
      create index users_created_id on users.users (created, id) where deleted is null;
    `,
  },
  {
    // Step 8: a tenant's members page in their users' (created, id) order, which no index could
    // give across the join: each page sorted every member (20 ms at 10,000). Each membership keeps
    // its user's creation time, set by a trigger whoever inserts (a user's created never changes),
    // so one index on the membership table gives the order. SECURITY DEFINER (owned by the
    // superuser running the step): the user may be one the inserting role cannot see yet.
    version: 8,
    sql: `
      alter table users.tenant_users add column user_created timestamptz;
      update users.tenant_users tu set user_created = u.created from users.users u where u.id = tu.user_id;
      create function platform.tenant_users_user_created() returns trigger
        language plpgsql security definer set search_path = pg_catalog, pg_temp
      as $function$
      begin
        select u.created into new.user_created from users.users u where u.id = new.user_id;
        return new;
      end
      $function$;
      revoke all on function platform.tenant_users_user_created() from public;
      create trigger tenant_users_user_created before insert or update of user_id on users.tenant_users
        for each row execute function platform.tenant_users_user_created();
      create index tenant_users_by_user_created on users.tenant_users (tenant_id, user_created, user_id);
    `,
  },
  {
    // Step 9: statistics from the start. A table never analyzed is planned as if it held ten pages
    // of rows, and autovacuum analyzes one only after 50 rows changed, so a database with a few
    // tenants and users (most of them) never had any: a member's read of their tenants took 0.31 ms
    // of SQL (bitmap scans, a materialize) instead of 0.05 ms, and the API served a third of the
    // reads per second (bench:scale). Analyzed while empty, a table is sized from its pages as it grows.
    version: 9,
    sql: `
      analyze public.tenants, users.users, users.tenant_users, auth.credentials, auth.sessions, auth.identities,
        platform.credential_tenants;
    `,
  },
  {
    // Step 10: TRUNCATE, which ignores row-level security, is refused on tenant-aware tables to
    // tenant-scoped credentials and in a tenant context (write-guard-steps.ts).
    version: 10,
    sql: TRUNCATE_GUARD_STEP,
  },
  {
    // Step 11: tenant-scoped credentials read shared tables (no tenant_id) but do not change them,
    // unless the database's owner grants more (write-guard-steps.ts).
    version: 11,
    sql: READ_ONLY_SHARED_TABLES_STEP,
  },
  {
    // Step 12: the API family's tenant model for unscoped credentials: every tenant's rows without a
    // context, one tenant's in a context set by either name; tenants and memberships over SQL
    // (tenant-context-step.ts).
    version: 12,
    sql: TENANT_CONTEXT_STEP,
  },
  {
    // Step 13: unscoped credentials create schemas (handed to the owner role as public's objects
    // are) and the extensions of an allowlist (schemas-extensions-step.ts).
    version: 13,
    sql: SCHEMAS_AND_EXTENSIONS_STEP,
  },
  {
    // Step 14: a schema tool's DROP POLICY or DISABLE ROW LEVEL SECURITY on a tenant-aware table
    // (drizzle-kit push, on every push after the first) is undone within the statement instead of
    // failing it (restore-isolation-step.ts).
    version: 14,
    sql: RESTORE_ISOLATION_STEP,
  },
  {
    // Step 15: one-time tokens for password reset, email verification and tenant invites, kept
    // hashed beside the users they act on (one-time-tokens-step.ts says why here).
    version: 15,
    sql: ONE_TIME_TOKENS_STEP,
  },
];

export const BUILT_IN_SCHEMA_VERSION = BUILT_IN_SCHEMA_STEPS[BUILT_IN_SCHEMA_STEPS.length - 1].version;
