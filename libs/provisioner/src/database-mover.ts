import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { CREDENTIAL_ROLE_NAME } from '@platform/domain';
import { assertPhysicalName, credentialRolesOf, databaseRoleNames, moverRoleName, scramVerifier, serviceRoleName, setDatabaseConnectionLimit } from '@platform/data-plane';
import { planRestore } from './restore-plan.js';
import { parseRoleSetting } from './role-settings.js';
import { CLUSTER_CONNECT_TIMEOUT_MS } from './cluster-driver.js';
import { assertSameSchema } from './schema-comparison.js';

/** pg_dump and pg_restore of the servers' own major version (tools/pg-client-tools.mjs puts them in place). */
export interface ClientTools {
  pgDump: string;
  pgRestore: string;
}

const RESTORE_JOBS = 2;

interface RoleRow {
  rolname: string;
  rolinherit: boolean;
  rolcanlogin: boolean;
  rolbypassrls: boolean;
  rolconnlimit: number;
  rolpassword: string | null;
  rolvaliduntil: string | null;
  /** Settings the role has in every database (`name=value`): a credential's limits among them. */
  settings: string[] | null;
}

interface MembershipRow {
  role: string;
  member: string;
  admin_option: boolean;
  inherit_option: boolean;
  set_option: boolean;
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  // A move runs for as long as it takes, but a server that never answers the login is given up on.
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CLUSTER_CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The database's own roles and its service role. */
function ownRoles(physicalName: string): string[] {
  return [...Object.values(databaseRoleNames(physicalName)), serviceRoleName(physicalName)];
}

function isCredentialRole(name: string): boolean {
  return CREDENTIAL_ROLE_NAME.test(name);
}

/** The database's connection limit as it stands (-1: none), to give the copy once it is restored. */
async function connectionLimitOf(admin: pg.Client, physicalName: string, otherwise: number): Promise<number> {
  const found = await admin.query<{ limit: number }>(`select datconnlimit as limit from pg_catalog.pg_database where datname = $1`, [physicalName]);
  if (!found.rowCount) throw new Error(`database ${physicalName} does not exist on the source`);
  // 0 is a pause an earlier attempt left behind, not the database's own limit.
  return Number(found.rows[0].limit) === 0 ? otherwise : Number(found.rows[0].limit);
}

async function superusersOf(admin: pg.Client): Promise<string[]> {
  const found = await admin.query<{ rolname: string }>(`select rolname from pg_catalog.pg_roles where rolsuper`);
  return found.rows.map((row) => row.rolname);
}

/**
 * Gives the owner role what the database's other roles own in it (objects its credentials made
 * that the platform's hand-over does not cover, such as operators, or made before it), as
 * deleting a credential does. Then the restore needs to act as the owner role alone, and its login
 * holds nothing more; in particular no credential's membership, which leads (SET ROLE) to the
 * admin role. Run on the paused source as its superuser: REASSIGN OWNED evaluates nothing.
 */
async function handOverToOwner(source: pg.Client, physicalName: string, roleNames: string[]): Promise<void> {
  const own = databaseRoleNames(physicalName);
  const from = [own.admin, own.tenant, own.scoped, ...roleNames.filter(isCredentialRole)].map((name) => source.escapeIdentifier(name));
  await source.query(`reassign owned by ${from.join(', ')} to ${source.escapeIdentifier(own.owner)}`);
}

/**
 * Creates the login that restores the customer's objects, connected to the new database as its
 * superuser: LOGIN and no other attribute, the owner role and the roles that own customer entries
 * (to recreate their objects and give them back), USAGE on the platform schema and EXECUTE on its
 * functions (the policies and triggers of tenant-aware tables name them); no privilege on the
 * platform's tables, the auth schema or another database.
 */
async function createMoverRole(database: pg.Client, physicalName: string, password: string, owners: string[]): Promise<void> {
  const id = (name: string) => database.escapeIdentifier(name);
  const mover = id(moverRoleName(physicalName));
  const memberships = [...new Set([databaseRoleNames(physicalName).owner, ...owners])];
  await database.query(
    [
      `create role ${mover} login password ${database.escapeLiteral(scramVerifier(password))}
         nosuperuser nocreatedb nocreaterole noreplication nobypassrls inherit connection limit ${RESTORE_JOBS + 2}`,
      ...memberships.map((role) => `grant ${id(role)} to ${mover} with inherit true, set true`),
      `grant usage on schema platform to ${mover}`,
      `grant execute on all functions in schema platform to ${mover}`,
    ].join(';\n'),
  );
}

/**
 * Drops the restoring login: no new logins, its sessions ended, whatever the customer's code made
 * as it dropped, its privileges revoked. A missing role is fine.
 */
async function dropMoverRole(admin: pg.Client, adminUrl: string, physicalName: string): Promise<void> {
  const name = moverRoleName(physicalName);
  const mover = admin.escapeIdentifier(name);
  const found = await admin.query(`select 1 from pg_catalog.pg_roles where rolname = $1`, [name]);
  if (!found.rowCount) return;
  await admin.query(`alter role ${mover} nologin`);
  await admin.query(`select pg_catalog.pg_terminate_backend(pid, 5000) from pg_catalog.pg_stat_activity where usename = $1`, [name]);
  const database = await admin.query(`select 1 from pg_catalog.pg_database where datname = $1`, [physicalName]);
  // Whatever it still owns the customer's code made while it restored (the restore gives every
  // object its owner): it goes, and so do the mover's privileges.
  if (database.rowCount) await withClient(databaseUrl(adminUrl, physicalName), (client) => client.query(`drop owned by ${mover}`));
  await admin.query(`drop role ${mover}`);
}

/** The target database as the restoring login. */
function moverUrl(adminUrl: string, physicalName: string, password: string): string {
  const url = new URL(databaseUrl(adminUrl, physicalName));
  url.username = moverRoleName(physicalName);
  url.password = encodeURIComponent(password);
  return url.href;
}

/**
 * Runs a client tool and answers what it printed; with `url`, connected there, the password in its
 * environment (never on its command line).
 */
function run(tool: string, args: string[], url?: string): Promise<string> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  const dbname: string[] = [];
  if (url !== undefined) {
    const parsed = new URL(url);
    env.PGPASSWORD = decodeURIComponent(parsed.password);
    env.PGCONNECT_TIMEOUT = '10';
    parsed.password = '';
    dbname.push(`--dbname=${parsed.href}`);
  }
  return new Promise((done, fail) => {
    const child = spawn(tool, [...args, ...dbname], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let printed = '';
    let errors = '';
    child.stdout.on('data', (chunk) => (printed += chunk));
    child.stderr.on('data', (chunk) => (errors += chunk));
    child.once('error', fail);
    child.once('close', (code) => (code === 0 ? done(printed) : fail(new Error(`${tool.split('/').pop()} failed (${code}): ${errors.trim().slice(0, 1500)}`))));
  });
}

/**
 * Moves one database from a PostgreSQL server to another of the same major version with
 * PostgreSQL's own tools: its roles first (cluster-wide objects a dump leaves out, copied with their
 * SCRAM verifiers, so every credential and the platform's service role log in unchanged), then,
 * with the source paused, pg_dump of the database and a restore on the target in three parts
 * (restore-plan.ts): the platform's objects as the target's superuser, the customer's as a login
 * that holds the database's owner role (`<database>_mover`, made for the move and dropped after
 * it), the platform's event triggers last; then the copy's schema must be the source's. PostgreSQL evaluates customer code while it restores
 * customer objects (CHECK and DOMAIN constraints, generated columns, index expressions...), and
 * that code must never run with a superuser's rights.
 *
 * pg_dump itself connects as the source's superuser: it reads catalogs and copies rows out, which
 * runs no trigger, constraint or policy of the customer's (a superuser's COPY TO bypasses row-level
 * security), it pins an empty search path, and PostgreSQL 17+ pg_dump refuses to read a view or a
 * foreign table in place of a table (restrict_nonsystem_relation_kind). The source is paused
 * meanwhile, so nothing of the customer's runs or changes during it.
 *
 * The pause: the source database's connection limit goes to 0 (superusers are exempt, so the dump
 * still connects) and its sessions are ended; a transaction under way is rolled back and nothing
 * writes to the source after that. The source stays paused after a move, until it is dropped: a
 * replica that still routes there is refused (and answers 503) instead of writing to a stale copy.
 */
export class DatabaseMover {
  /** `connectionLimit`: the sessions a database may hold on a shared cluster, which `resume` gives back (-1: none). */
  constructor(
    private readonly tools: ClientTools,
    private readonly connectionLimit = -1,
  ) {}

  /**
   * Copies the database from `sourceAdminUrl`'s server to `targetAdminUrl`'s (superuser URLs);
   * answers when the source paused. `beforePause` runs just before (the gateways and the API learn
   * of the move: logins wait, credentials are neither created nor dropped until it ends).
   * `targetShared`: the target is a shared cluster (false: a dedicated compute instance's server).
   */
  async move(
    physicalName: string,
    sourceAdminUrl: string,
    targetAdminUrl: string,
    beforePause: () => Promise<void> = async () => {},
    { targetShared = true }: { targetShared?: boolean } = {},
  ): Promise<{ pausedAt: number }> {
    const connectionLimit = await withClient(sourceAdminUrl, (source) => connectionLimitOf(source, physicalName, this.connectionLimit));
    await beforePause();
    const pausedAt = Date.now();
    await this.pause(sourceAdminUrl, physicalName);
    const work = mkdtempSync(join(tmpdir(), 'platform-move-'));
    try {
      // Read once the source is paused and marked moving: no credential comes or goes meanwhile.
      const { roles, superusers } = await withClient(sourceAdminUrl, async (source) => ({
        roles: await this.readRoles(source, physicalName),
        superusers: await superusersOf(source),
      }));
      await withClient(databaseUrl(sourceAdminUrl, physicalName), (source) => handOverToOwner(source, physicalName, roles.roles.map((role) => role.rolname)));
      await withClient(targetAdminUrl, async (target) => {
        // An earlier copy on the target (a move back within the old copy's grace, a retried move)
        // goes first, with the roles of credentials deleted since: they must not log in again there.
        await target.query(`drop database if exists ${physicalName} with (force)`);
        await dropMoverRole(target, targetAdminUrl, physicalName);
        const kept = new Set(roles.roles.map((role) => role.rolname));
        for (const stale of await credentialRolesOf(target, physicalName)) {
          if (!kept.has(stale)) await target.query(`drop role if exists ${target.escapeIdentifier(stale)}`);
        }
        await this.writeRoles(target, physicalName, roles);
      });
      const dump = join(work, 'database.dump');
      // Uncompressed: the copy stays on this machine, and compressing would lengthen the pause.
      await run(this.tools.pgDump, ['--format=custom', '--compress=0', `--file=${dump}`], databaseUrl(sourceAdminUrl, physicalName));
      const plan = planRestore(await run(this.tools.pgRestore, ['--list', '--create', dump]), {
        platform: new Set([...superusers, 'pg_database_owner']),
        customer: new Set([...Object.values(databaseRoleNames(physicalName)), ...roles.roles.map((role) => role.rolname).filter(isCredentialRole)]),
      });
      const list = (name: string, lines: string[]) => {
        const file = join(work, `${name}.list`);
        writeFileSync(file, lines.join('\n') + '\n');
        return `--use-list=${file}`;
      };
      // 1. The database and the platform's objects, before anything of the customer's exists.
      await run(this.tools.pgRestore, ['--create', '--exit-on-error', list('platform', plan.platform), dump], databaseUrl(targetAdminUrl, 'postgres'));
      // The dump carried the source's paused connection limit. A shared cluster's databases get the
      // configured cap; a dedicated server holds this database alone, and its own max_connections bounds it.
      await withClient(targetAdminUrl, (target) => setDatabaseConnectionLimit(target, physicalName, targetShared ? this.connectionLimit : -1));
      // 2. The customer's objects, as a login that holds the owner role and nothing more (see
      // handOverToOwner). Two jobs: tables' data and indexes load side by side. Extensions, which
      // a dump gives no owner, as the owner role: restored as the login, they would go with it.
      if (plan.customer.length > 0) {
        const password = randomBytes(32).toString('base64url');
        await withClient(databaseUrl(targetAdminUrl, physicalName), (database) => createMoverRole(database, physicalName, password, plan.customerOwners));
        for (const [index, customerRun] of plan.customerRuns.entries()) {
          const as = customerRun.asOwner ? [`--role=${databaseRoleNames(physicalName).owner}`] : [`--jobs=${RESTORE_JOBS}`];
          await run(this.tools.pgRestore, ['--exit-on-error', ...as, list(`customer-${index}`, customerRun.lines), dump], moverUrl(targetAdminUrl, physicalName, password));
        }
      }
      // 3. The platform's event triggers, which would have fired on the restore's own DDL.
      if (plan.last.length > 0) {
        await run(this.tools.pgRestore, ['--exit-on-error', list('last', plan.last), dump], databaseUrl(targetAdminUrl, physicalName));
      }
      // What the customer's code made while it ran as the mover goes with it; what it changed fails the move.
      await withClient(targetAdminUrl, (target) => dropMoverRole(target, targetAdminUrl, physicalName));
      assertSameSchema(
        await run(this.tools.pgRestore, ['--schema-only', '--file=-', dump]),
        await run(this.tools.pgDump, ['--schema-only'], databaseUrl(targetAdminUrl, physicalName)),
      );
    } catch (error) {
      await this.resume(sourceAdminUrl, physicalName, connectionLimit).catch(() => undefined);
      throw error;
    } finally {
      await withClient(targetAdminUrl, (target) => dropMoverRole(target, targetAdminUrl, physicalName)).catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    }
    return { pausedAt };
  }

  /** Refuses every new session of the database but superusers', and ends those it has. */
  async pause(adminUrl: string, physicalName: string): Promise<void> {
    assertPhysicalName(physicalName);
    await withClient(adminUrl, async (admin) => {
      await setDatabaseConnectionLimit(admin, physicalName, 0);
      await admin.query(`select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [physicalName]);
    });
  }

  /** Lets sessions in again (a move that failed, or a database that stays where it is), up to `limit`. */
  async resume(adminUrl: string, physicalName: string, limit = this.connectionLimit): Promise<void> {
    assertPhysicalName(physicalName);
    await withClient(adminUrl, async (admin) => {
      const found = await admin.query(`select 1 from pg_database where datname = $1`, [physicalName]);
      if (found.rowCount) await setDatabaseConnectionLimit(admin, physicalName, limit);
    });
  }

  /** The database's own roles, its service role and its credentials' roles, with their memberships. */
  private async readRoles(source: pg.Client, physicalName: string): Promise<{ roles: RoleRow[]; memberships: MembershipRow[] }> {
    const names = [...ownRoles(physicalName), ...(await credentialRolesOf(source, physicalName))];
    const roles = await source.query<RoleRow>(
      `select a.rolname, a.rolinherit, a.rolcanlogin, a.rolbypassrls, a.rolconnlimit, a.rolpassword, a.rolvaliduntil::text, s.setconfig as settings
         from pg_authid a left join pg_db_role_setting s on s.setrole = a.oid and s.setdatabase = 0
        where a.rolname = any($1) order by a.rolname`,
      [names],
    );
    const memberships = await source.query<MembershipRow>(
      `select grp.rolname as role, member.rolname as member, m.admin_option, m.inherit_option, m.set_option
         from pg_auth_members m join pg_roles grp on grp.oid = m.roleid join pg_roles member on member.oid = m.member
        where grp.rolname = any($1) and member.rolname = any($1)`,
      [names],
    );
    return { roles: roles.rows, memberships: memberships.rows };
  }

  private async writeRoles(target: pg.Client, physicalName: string, input: { roles: RoleRow[]; memberships: MembershipRow[] }): Promise<void> {
    const roles = databaseRoleNames(physicalName);
    const service = serviceRoleName(physicalName);
    const id = (name: string) => target.escapeIdentifier(name);
    const yes = (flag: boolean, word: string) => (flag ? word : `no${word}`);
    for (const role of input.roles) {
      const exists = await target.query(`select 1 from pg_roles where rolname = $1`, [role.rolname]);
      if (!exists.rowCount) await target.query(`create role ${id(role.rolname)}`);
      // Whatever the source says, a customer's role gets no power over the cluster here: only the
      // database's admin and service roles keep the BYPASSRLS they are made with.
      const mayBypass = role.rolname === roles.admin || role.rolname === service;
      const attributes = [
        'nosuperuser nocreaterole nocreatedb noreplication',
        yes(role.rolinherit, 'inherit'),
        yes(role.rolcanlogin, 'login'),
        yes(role.rolbypassrls && mayBypass, 'bypassrls'),
        `connection limit ${Number(role.rolconnlimit)}`,
        // The verifier as stored: PostgreSQL takes a SCRAM verifier as the password itself.
        role.rolpassword === null ? 'password null' : `password ${target.escapeLiteral(role.rolpassword)}`,
        role.rolvaliduntil === null ? `valid until 'infinity'` : `valid until ${target.escapeLiteral(role.rolvaliduntil)}`,
      ];
      await target.query(`alter role ${id(role.rolname)} ${attributes.join(' ')}`);
      await target.query(`alter role ${id(role.rolname)} reset all`);
      for (const setting of role.settings ?? []) {
        const { name, value } = parseRoleSetting(role.rolname, setting);
        await target.query(`alter role ${id(role.rolname)} set ${name} to ${target.escapeLiteral(value)}`);
      }
    }
    for (const m of input.memberships) {
      await target.query(
        `grant ${id(m.role)} to ${id(m.member)} with admin ${m.admin_option}, inherit ${m.inherit_option}, set ${m.set_option}`,
      );
    }
  }
}
