import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { CREDENTIAL_ROLE_NAME, CREDENTIAL_ROLE_PREFIX, isUuid, NotFoundError } from '@platform/domain';
import { credentialLimitStatements, DATABASE_LIMIT_DEFAULTS, type CredentialSessionLimits } from './database-limits.js';
import { databaseRoleNames, moverRoleName } from './database-roles.js';
import { scramVerifier } from './scram-verifier.js';
import { serviceRoleName } from './service-role.js';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** Databases every cluster has that PUBLIC may connect to unless told otherwise. */
const MAINTENANCE_DATABASES = ['postgres', 'template1'];
/** Sessions one credential may hold at once. */
const CONNECTION_LIMIT = 100;
/** How long dropCredentialRole waits for each session it ends to go. */
const TERMINATE_WAIT_MS = 5_000;

/** A new random credential role name: the prefix and 20 lowercase base32 characters (100 bits). */
export function credentialRoleName(): string {
  // 256 is a multiple of 32: every character is equally likely.
  return CREDENTIAL_ROLE_PREFIX + [...randomBytes(20)].map((byte) => BASE32[byte % 32]).join('');
}

/**
 * The roles of a database's credentials on a server: members of its roles (its own and its
 * service role) named like credentials, by name. By prefix, not the whole pattern: a stray
 * `cred_` member of the database's groups is the database's too, and goes with it.
 */
export async function credentialRolesOf(admin: pg.ClientBase, physicalName: string): Promise<string[]> {
  const groups = [...Object.values(databaseRoleNames(physicalName)), serviceRoleName(physicalName)];
  const found = await admin.query<{ rolname: string }>(
    `select distinct member.rolname
       from pg_catalog.pg_auth_members m
       join pg_catalog.pg_roles grp on grp.oid = m.roleid
       join pg_catalog.pg_roles member on member.oid = m.member
      where grp.rolname = any($1::text[]) and pg_catalog.starts_with(member.rolname, $2::text)
      order by member.rolname`,
    [groups, CREDENTIAL_ROLE_PREFIX],
  );
  return found.rows.map((row) => row.rolname);
}

function assertCredentialRoleName(roleName: string): void {
  if (!CREDENTIAL_ROLE_NAME.test(roleName)) throw new Error(`refusing credential role name '${roleName}'`);
}

async function assertConnectedTo(database: pg.ClientBase, physicalName: string): Promise<void> {
  const { rows } = await database.query<{ name: string }>('select pg_catalog.current_database() as name');
  if (rows[0].name !== physicalName) throw new Error(`expected a connection to ${physicalName}, got one to ${rows[0].name}`);
}

/**
 * Creates the login role of a credential of database `physicalName` (names validated here, the
 * password sent only as its SCRAM verifier). Unscoped: a member of the owner role, and of the admin
 * role only by SET ROLE. Scoped: a member of the scoped role, bound to `tenantId` (a
 * `tenant_not_found` NotFoundError when that tenant does not exist or is deleted). `admin` is a
 * superuser connection to any database of the cluster, `database` one to `physicalName`. Also
 * takes CONNECT on the maintenance databases away from PUBLIC, so the role reaches its own only.
 * The role carries `limits` (default DATABASE_LIMIT_DEFAULTS) from its first session on (ALTER ROLE ... SET).
 * Its SQL names built-ins with their schema and types its parameters, since the database may hold
 * customer functions; connect `database` with the data plane's pinned search path all the same.
 */
export async function createCredentialRole(
  admin: pg.ClientBase,
  database: pg.ClientBase,
  input: { physicalName: string; roleName: string; password: string; tenantId: string | null; limits?: CredentialSessionLimits },
): Promise<void> {
  const roles = databaseRoleNames(input.physicalName);
  assertCredentialRoleName(input.roleName);
  await assertConnectedTo(database, input.physicalName);
  const [role, owner, adminRole, scoped] = [input.roleName, roles.owner, roles.admin, roles.scoped].map((name) => admin.escapeIdentifier(name));
  const memberships =
    input.tenantId === null
      ? [`grant ${owner} to ${role} with inherit true, set true`, `grant ${adminRole} to ${role} with inherit false, set true`]
      : [`grant ${scoped} to ${role} with inherit true, set false`];
  await closeMaintenanceDatabases(admin);

  // The binding waits, uncommitted, for the role: a failure on either side leaves neither.
  await database.query('begin');
  let created = false;
  try {
    if (input.tenantId !== null) await bindTenant(database, input.roleName, input.tenantId);
    // One simple-protocol query: one implicit transaction.
    await admin.query(
      [
        `create role ${role} login password ${admin.escapeLiteral(scramVerifier(input.password))}
           nosuperuser nocreatedb nocreaterole noreplication nobypassrls inherit connection limit ${CONNECTION_LIMIT}`,
        ...memberships,
        ...credentialLimitStatements(input.roleName, input.limits ?? DATABASE_LIMIT_DEFAULTS.session),
      ].join(';\n'),
    );
    created = true;
    await database.query('commit');
  } catch (error) {
    await database.query('rollback').catch(() => {});
    if (created && admin !== database) await admin.query(`drop role if exists ${role}`).catch(() => {});
    throw error;
  }
}

async function bindTenant(database: pg.ClientBase, roleName: string, tenantId: string): Promise<void> {
  const bound = isUuid(tenantId)
    ? await database.query(
        `insert into platform.credential_tenants (role_name, tenant_id)
         select $1::name, id from public.tenants where id = $2::uuid and deleted is null
         on conflict (role_name) do update set tenant_id = excluded.tenant_id`,
        [roleName, tenantId],
      )
    : { rowCount: 0 };
  if (bound.rowCount === 0) throw new NotFoundError('tenant_not_found', 'Tenant not found');
}

/** PUBLIC may connect to a fresh cluster's maintenance databases; the platform's superuser connections do not need it. */
async function closeMaintenanceDatabases(admin: pg.ClientBase): Promise<void> {
  const { rows } = await admin.query<{ name: string }>(
    `select datname as name from pg_catalog.pg_database
      where datname = any($1::name[]) and pg_catalog.has_database_privilege('public', oid, 'CONNECT')`,
    [MAINTENANCE_DATABASES],
  );
  for (const { name } of rows) await admin.query(`revoke connect on database ${admin.escapeIdentifier(name)} from public`);
}

/**
 * Drops a credential's role: no new logins, its sessions ended, what it still owns in
 * `physicalName` handed to the owner role, its tenant binding removed. A missing role is fine.
 */
export async function dropCredentialRole(
  admin: pg.ClientBase,
  database: pg.ClientBase,
  input: { physicalName: string; roleName: string },
): Promise<void> {
  const roles = databaseRoleNames(input.physicalName);
  assertCredentialRoleName(input.roleName);
  await assertConnectedTo(database, input.physicalName);
  const role = admin.escapeIdentifier(input.roleName);
  const { rowCount } = await admin.query('select 1 from pg_catalog.pg_roles where rolname = $1::name', [input.roleName]);
  if (rowCount) {
    await admin.query(`alter role ${role} nologin`);
    await admin.query(
      `select pg_catalog.pg_terminate_backend(pid, $2::bigint) from pg_catalog.pg_stat_activity
        where usesysid = (select oid from pg_catalog.pg_roles where rolname = $1::name)`,
      [input.roleName, TERMINATE_WAIT_MS],
    );
    await database.query(`reassign owned by ${role} to ${database.escapeIdentifier(roles.owner)}; drop owned by ${role}`);
  }
  await database.query('delete from platform.credential_tenants where role_name = $1::name', [input.roleName]);
  await admin.query(`drop role if exists ${role}`);
}

/** Drops a dropped database's own roles (owner, tenant, admin, scoped, service, a move's leftover login), after its credentials' roles. */
export async function dropDatabaseRoles(admin: pg.ClientBase, physicalName: string): Promise<void> {
  const names = [...Object.values(databaseRoleNames(physicalName)), serviceRoleName(physicalName), moverRoleName(physicalName)].map((name) =>
    admin.escapeIdentifier(name),
  );
  await admin.query(`drop role if exists ${names.join(', ')}`);
}
