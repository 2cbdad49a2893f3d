import { ONE_TIME_TOKEN_PURPOSES } from '@platform/domain';
import { SERVICE_ROLE_SUFFIX } from './service-role.js';

for (const purpose of ONE_TIME_TOKEN_PURPOSES) {
  if (!/^[a-z_]+$/.test(purpose)) throw new Error(`unexpected one-time token purpose '${purpose}'`);
}

/**
 * Built-in schema step 15: the one-time tokens of password reset, email verification and tenant
 * invites. They live in each database, beside the users and tenants they act on, rather than in
 * the control plane: a database's users exist only in it, so the foreign keys hold (a user or
 * tenant deleted takes its tokens along), a purged database takes them too, and no query of one
 * database can reach another's. In the auth schema, which customer credentials cannot read; only
 * the SHA-256 digest of each token is kept. A token is live while `consumed` and `revoked` are
 * null and `expires` is ahead.
 */
export const ONE_TIME_TOKENS_STEP = `
  create table auth.one_time_tokens (
    id uuid primary key default gen_random_uuid(),
    token_hash text not null unique,
    purpose text not null check (purpose in (${ONE_TIME_TOKEN_PURPOSES.map((purpose) => `'${purpose}'`).join(', ')})),
    user_id uuid references users.users (id) on delete cascade,
    email text not null,
    tenant_id uuid references public.tenants (id) on delete cascade,
    created_by uuid references users.users (id) on delete set null,
    created timestamptz not null default pg_catalog.now(),
    expires timestamptz not null,
    consumed timestamptz,
    revoked timestamptz,
    -- An invite names a tenant and maybe nobody yet; every other token acts on one account.
    constraint one_time_tokens_subject check (case when purpose = 'tenant_invite' then tenant_id is not null else user_id is not null end)
  );
  create index one_time_tokens_live_user on auth.one_time_tokens (user_id, purpose) where consumed is null and revoked is null;
  create index one_time_tokens_live_tenant on auth.one_time_tokens (tenant_id, purpose, created) where consumed is null and revoked is null;
  do $grant$
  begin
    execute pg_catalog.format('grant select, insert, update, delete on auth.one_time_tokens to %I',
      pg_catalog.current_database() || '${SERVICE_ROLE_SUFFIX}');
  end
  $grant$;
  analyze auth.one_time_tokens;
`;
