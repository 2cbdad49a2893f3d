import { createHmac } from 'node:crypto';
import type pg from 'pg';
import { databaseUrl } from '@platform/config';
import { DATABASE_ROLE_SUFFIXES, assertPhysicalName } from './database-roles.js';
import { scramVerifier } from './scram-verifier.js';

/**
 * The role the platform's own API reaches a database as (`<database>_service`): a login of that
 * database only, with DML on the built-in tables and nothing else; BYPASSRLS so that
 * administration (every tenant, every user) needs no setting, and SET ROLE to the database's
 * tenant role for a tenant's queries. Not a superuser: in a tenant's transaction `RESET ROLE`
 * comes back to it, and `SET ROLE postgres` or `SET SESSION AUTHORIZATION` fail.
 */
export const SERVICE_ROLE_SUFFIX = '_service';

export function serviceRoleName(physicalName: string): string {
  assertPhysicalName(physicalName);
  return physicalName + SERVICE_ROLE_SUFFIX;
}

/**
 * Built-in schema step 5. Names every object with its schema: it is the first step applied to
 * databases that already hold customer objects (under the pinned search path).
 */
export const SERVICE_ROLE_STEP = `
  do $service$
  declare
    service_role name := current_database() || '${SERVICE_ROLE_SUFFIX}';
    tenant_role name := current_database() || '${DATABASE_ROLE_SUFFIXES.tenant}';
  begin
    begin
      execute pg_catalog.format('create role %I nologin', service_role);
    exception when duplicate_object or unique_violation then
      null;
    end;
    -- Reset every time: what the API may do rests on these attributes.
    execute pg_catalog.format('alter role %I nosuperuser nocreatedb nocreaterole noreplication bypassrls', service_role);
    execute pg_catalog.format('grant connect on database %I to %I', current_database(), service_role);
    execute pg_catalog.format('grant usage on schema public, users, auth, platform to %I', service_role);
    execute pg_catalog.format('grant select, insert, update, delete on public.tenants to %I', service_role);
    execute pg_catalog.format('grant select, insert, update, delete on all tables in schema users, auth to %I', service_role);
    execute pg_catalog.format('grant usage, select on all sequences in schema users, auth to %I', service_role);
    execute pg_catalog.format('grant execute on function platform.current_tenant_id() to %I', service_role);
    execute pg_catalog.format('grant %I to %I with inherit false, set true', tenant_role, service_role);
  end
  $service$;
`;

/**
 * The service role's password: derived from the cluster's administrative URL, which only the
 * platform holds (and whoever holds it is the cluster's superuser anyway), so every API replica
 * computes the same one and nothing is stored. A changed administrative password changes it; the
 * next login refused sets it again (enableServiceLogin).
 */
export function servicePassword(clusterAdminUrl: string, physicalName: string): string {
  return createHmac('sha256', clusterAdminUrl).update(`data-plane service role\0${physicalName}`).digest('base64url');
}

/** Service URLs made so far: the API asks for one on every request, and an HMAC and two URL parses cost 5% of its hot read. */
const serviceUrls = new Map<string, string>();
/** Past this many, the cache starts again (databases come and go; a lost entry is only recomputed). */
const SERVICE_URLS_KEPT = 20_000;

/**
 * The URL the API reaches a database with: its service role, on the cluster's host and port, or on
 * `server` (a dedicated compute instance's), where the role moved with its verifier.
 */
export function serviceUrl(clusterAdminUrl: string, physicalName: string, server?: { host: string; port: number } | null): string {
  const key = `${clusterAdminUrl}\0${physicalName}\0${server ? `${server.host}\0${server.port}` : ''}`;
  let url = serviceUrls.get(key);
  if (url === undefined) {
    if (serviceUrls.size >= SERVICE_URLS_KEPT) serviceUrls.clear();
    url = makeServiceUrl(clusterAdminUrl, physicalName, server);
    serviceUrls.set(key, url);
  }
  return url;
}

function makeServiceUrl(clusterAdminUrl: string, physicalName: string, server?: { host: string; port: number } | null): string {
  const url = new URL(databaseUrl(clusterAdminUrl, physicalName));
  if (server) {
    url.hostname = server.host.includes(':') ? `[${server.host}]` : server.host;
    url.port = String(server.port);
  }
  url.username = serviceRoleName(physicalName);
  url.password = servicePassword(clusterAdminUrl, physicalName);
  return url.href;
}

/** Serialises enableServiceLogin per role: two concurrent ALTER ROLEs of one role fail ("tuple concurrently updated"). */
const SERVICE_LOGIN_LOCK = 7426003;

/**
 * SCRAM iterations of the service role's verifier. Iterations slow down guessing a password from a
 * stolen verifier, which matters for passwords people choose; the service password is a 256-bit
 * HMAC, which no number of guesses finds. What they cost otherwise is paid at every login, by the
 * API (the client derives the key: 4096 rounds of PBKDF2 are about 2 ms of its CPU), so with one the
 * API's new connections cost what PostgreSQL's backend start does and no more.
 */
const SERVICE_SCRAM_ITERATIONS = 1;

/** Lets the service role log in with its derived password (the cluster stores only a SCRAM verifier). */
export async function enableServiceLogin(admin: pg.ClientBase, clusterAdminUrl: string, physicalName: string): Promise<void> {
  const name = serviceRoleName(physicalName);
  const verifier = admin.escapeLiteral(scramVerifier(servicePassword(clusterAdminUrl, physicalName), SERVICE_SCRAM_ITERATIONS));
  await admin.query('begin');
  try {
    await admin.query('select pg_catalog.pg_advisory_xact_lock($1::int, pg_catalog.hashtext($2::text))', [SERVICE_LOGIN_LOCK, name]);
    await admin.query(`alter role ${admin.escapeIdentifier(name)} login password ${verifier}`);
    await admin.query('commit');
  } catch (error) {
    await admin.query('rollback').catch(() => {});
    throw error;
  }
}
