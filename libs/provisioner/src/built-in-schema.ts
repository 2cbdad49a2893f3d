/**
 * The tables every platform database starts with, as ordered steps. Each database records the
 * steps it has in `platform.schema_steps`, so a later release adds a step and the provisioner
 * brings older databases up to date. Never edit a released step; add one.
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
];

export const BUILT_IN_SCHEMA_VERSION = BUILT_IN_SCHEMA_STEPS[BUILT_IN_SCHEMA_STEPS.length - 1].version;
