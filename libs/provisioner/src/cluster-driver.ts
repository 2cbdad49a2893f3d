import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { cutQueriesAtDeadline, honourDeadlines } from '@platform/deadline';
import {
  UnavailableError,
  type ClusterActivity,
  type ClusterDirectory,
  type ClusterDriver,
  type CustomerRoleRepair,
  type Database,
  type LoginRoles,
  type Region,
} from '@platform/domain';
import { isLocalPostgres } from './process-cpu.js';
import {
  auditCustomerRoles,
  applyDatabaseLimits,
  assertPhysicalName,
  BUILT_IN_SCHEMA_VERSION,
  createCredentialRole,
  credentialRoleName,
  credentialRolesOf,
  DATABASE_LIMIT_DEFAULTS,
  dropCredentialRole,
  dropDatabaseRoles,
  enableServiceLogin,
  installBuiltInSchema,
  installedSchemaVersion,
  PINNED_SEARCH_PATH_OPTIONS,
  setDatabaseAllowConnections,
  type DatabaseLimits,
} from '@platform/data-plane';

/** How long opening a connection to a cluster may take, unless the directory is told otherwise. */
export const CLUSTER_CONNECT_TIMEOUT_MS = 10_000;

/** Where a driver reports roles its audit repaired: an error, since something gave a customer's role what the platform never does. */
export type RoleRepairLog = (repair: CustomerRoleRepair) => void;

/** A PostgreSQL cluster reached with an administrative URL (one that may create databases). */
export class PgClusterDriver implements ClusterDriver {
  private readonly admin: pg.Pool;

  /** The qualified name of pg_stat_statements' view, once the extension is in place. */
  private statementsView: string | undefined;

  /**
   * `secretUrl` is what service-role passwords derive from: the region cluster's URL, also for a
   * dedicated server that holds one of its databases (the roles moved there with their verifiers).
   * `limits`: what each credential's sessions and (on a shared cluster, `shared`) each database may
   * take; a dedicated server holds one database, whose connections its own size bounds.
   * Connections open within `connectTimeoutMs`; queries run for as long as they take, unless a
   * request runs them (`@platform/deadline`): provisioning DDL and moves run outside any request.
   */
  constructor(
    private readonly adminUrl: string,
    private readonly secretUrl = adminUrl,
    private readonly limits: DatabaseLimits = DATABASE_LIMIT_DEFAULTS,
    private readonly shared = true,
    private readonly onRoleRepaired: RoleRepairLog = () => {},
    private readonly connectTimeoutMs = CLUSTER_CONNECT_TIMEOUT_MS,
  ) {
    this.admin = new pg.Pool({ connectionString: adminUrl, options: PINNED_SEARCH_PATH_OPTIONS, max: 2, idleTimeoutMillis: 10_000, connectionTimeoutMillis: connectTimeoutMs });
    this.admin.on('error', () => {});
    // A connection lost while checked out says so with an 'error', which must not end the process.
    this.admin.on('connect', (client) => client.on('error', () => {}));
    // Its checkouts (pool.query's too: DROP DATABASE runs inside DELETE requests) and queries give up
    // at the deadline of the request that runs them.
    honourDeadlines(this.admin, 'a cluster admin connection');
  }

  async createDatabase(physicalName: string): Promise<void> {
    assertPhysicalName(physicalName);
    if (await this.exists(physicalName)) return;
    try {
      await this.admin.query(`create database ${physicalName}`);
    } catch (error) {
      // Another worker created it between our check and our statement: the outcome is the same.
      // PostgreSQL says so with 42P04, or with 23505 when both inserts into pg_database race.
      const { code, constraint } = error as { code?: string; constraint?: string };
      const raced = code === '42P04' || (code === '23505' && constraint === 'pg_database_datname_index');
      if (!raced) throw error;
    }
  }

  async installBuiltInSchema(physicalName: string): Promise<void> {
    // Released steps create objects by unqualified name: the installer alone keeps the default path.
    await this.withDatabase(physicalName, installBuiltInSchema, { pinSearchPath: false });
    await this.withAdmin(async (admin) => {
      await enableServiceLogin(admin, this.secretUrl, physicalName);
      await applyDatabaseLimits(admin, this.limits, { only: physicalName, connections: this.shared });
    });
  }

  /**
   * Applies the steps a READY database lacks and (re)enables its service login. The database may
   * hold customer objects, so this runs under the pinned search path: the steps it applies (5 on)
   * name every object with its schema.
   */
  async upgradeBuiltInSchema(physicalName: string): Promise<void> {
    await this.withDatabase(physicalName, installBuiltInSchema);
    await this.withAdmin(async (admin) => {
      await enableServiceLogin(admin, this.secretUrl, physicalName);
      await applyDatabaseLimits(admin, this.limits, { only: physicalName, connections: this.shared });
    });
    // Each repair checks the database's roles too.
    await this.auditCustomerRoles(physicalName);
  }

  async auditCustomerRoles(physicalName?: string): Promise<CustomerRoleRepair[]> {
    if (physicalName !== undefined) assertPhysicalName(physicalName);
    const repairs = await this.withAdmin((admin) => auditCustomerRoles(admin, physicalName ?? null));
    for (const repair of repairs) this.onRoleRepaired(repair);
    return repairs;
  }

  /**
   * Brings every platform database of the cluster and its credentials to the configured limits
   * (a start-up pass: a changed setting reaches what was made before; paused databases are left
   * to the mover). Answers how many roles and databases changed.
   */
  async applyLimits(): Promise<{ roles: number; databases: number }> {
    return this.withAdmin((admin) => applyDatabaseLimits(admin, this.limits, { connections: this.shared }));
  }

  async verifyDatabase(physicalName: string): Promise<void> {
    await this.withDatabase(physicalName, async (client) => {
      const version = await installedSchemaVersion(client);
      if (version !== BUILT_IN_SCHEMA_VERSION) {
        throw new Error(`database ${physicalName} has built-in schema ${version}, expected ${BUILT_IN_SCHEMA_VERSION}`);
      }
      await client.query('select count(*) from public.tenants');
    });
  }

  /**
   * Refuses connections first, then ends the sessions open now: none can start in between. A
   * session's backend is signalled and gone a moment later; waiting for each (up to 5 s) lets the
   * caller answer once they are.
   */
  async closeDatabase(physicalName: string): Promise<void> {
    await this.withAdmin(async (admin) => {
      if (!(await setDatabaseAllowConnections(admin, physicalName, false))) return;
      await admin.query(`select pg_catalog.pg_terminate_backend(pid, 5000) from pg_catalog.pg_stat_activity where datname = $1 and pid <> pg_catalog.pg_backend_pid()`, [
        physicalName,
      ]);
    });
  }

  async reopenDatabase(physicalName: string): Promise<void> {
    await this.withAdmin((admin) => setDatabaseAllowConnections(admin, physicalName, true));
  }

  async dropDatabase(physicalName: string): Promise<void> {
    assertPhysicalName(physicalName);
    // FORCE ends the database's open sessions, which would otherwise block the drop.
    await this.admin.query(`drop database if exists ${physicalName} with (force)`);
    // Roles are cluster-wide and would outlive the database. With it gone they own nothing and
    // hold no privilege, so plain drops succeed; the credentials' memberships say which are its.
    await this.withAdmin(async (admin) => {
      for (const role of await credentialRolesOf(admin, physicalName)) await admin.query(`drop role if exists ${admin.escapeIdentifier(role)}`);
      await dropDatabaseRoles(admin, physicalName);
    });
  }

  /** Creates a login role for the database (see `LoginRoles`) and answers its name. */
  async createLoginRole(physicalName: string, input: { password: string; tenantId: string | null }): Promise<string> {
    const roleName = credentialRoleName();
    await this.withAdminAndDatabase(physicalName, (admin, database) =>
      createCredentialRole(admin, database, { physicalName, roleName, password: input.password, tenantId: input.tenantId, limits: this.limits.session }),
    );
    return roleName;
  }

  /** Ends the role's sessions, hands what it created to the database's owner role, drops it. */
  async dropLoginRole(physicalName: string, roleName: string): Promise<void> {
    await this.withAdminAndDatabase(physicalName, (admin, database) => dropCredentialRole(admin, database, { physicalName, roleName }));
  }

  async listDatabases(prefix: string): Promise<string[]> {
    const result = await this.admin.query<{ datname: string }>(
      `select datname from pg_database where starts_with(datname, $1) order by datname`,
      [prefix],
    );
    return result.rows.map((row) => row.datname);
  }

  connectionUrl(physicalName: string): string {
    const url = new URL(this.adminUrl);
    return `postgres://${url.host}/${physicalName}`;
  }

  async activity(): Promise<ClusterActivity> {
    return this.withAdmin(async (admin) => {
      const backends = new Map<string, number[]>();
      const rows = await admin.query<{ datname: string; pid: number }>(
        `select datname, pid from pg_stat_activity where backend_type = 'client backend' and datname is not null`,
      );
      for (const { datname, pid } of rows.rows) backends.set(datname, [...(backends.get(datname) ?? []), pid]);
      const own = await admin.query<{ pid: number }>('select pg_backend_pid() as pid');
      return { statements: await this.statements(admin), backends, localProcesses: isLocalPostgres(own.rows[0].pid) };
    });
  }

  async close(): Promise<void> {
    await this.admin.end();
  }

  /** Statements per database from pg_stat_statements, or null when the server does not load it. */
  private async statements(admin: pg.PoolClient): Promise<Map<string, number> | null> {
    try {
      if (!this.statementsView) {
        // The admin connection's search path is pinned to pg_catalog: the schema is named.
        await admin.query('create extension if not exists pg_stat_statements schema public');
        const found = await admin.query<{ schema: string }>(
          `select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_stat_statements'`,
        );
        this.statementsView = `${admin.escapeIdentifier(found.rows[0].schema)}.pg_stat_statements`;
      }
      const rows = await admin.query<{ datname: string; calls: string }>(
        `select d.datname, sum(s.calls)::bigint as calls from ${this.statementsView} s join pg_database d on d.oid = s.dbid group by d.datname`,
      );
      return new Map(rows.rows.map((row) => [row.datname, Number(row.calls)]));
    } catch (error) {
      // 55000: not in shared_preload_libraries; 58P01/0A000: not installed on this server.
      if (['55000', '58P01', '0A000', '42883'].includes((error as { code?: string }).code ?? '')) return null;
      throw error;
    }
  }

  private async exists(physicalName: string): Promise<boolean> {
    const result = await this.admin.query('select 1 from pg_database where datname = $1', [physicalName]);
    return (result.rowCount ?? 0) > 0;
  }

  /** One connection of the admin pool: the data-plane functions take a client, not a pool. */
  private async withAdmin<T>(fn: (admin: pg.PoolClient) => Promise<T>): Promise<T> {
    const admin = await this.admin.connect();
    try {
      return await fn(admin);
    } finally {
      admin.release();
    }
  }

  private withAdminAndDatabase<T>(physicalName: string, fn: (admin: pg.PoolClient, database: pg.Client) => Promise<T>): Promise<T> {
    return this.withDatabase(physicalName, (database) => this.withAdmin((admin) => fn(admin, database)));
  }

  private async withDatabase<T>(physicalName: string, fn: (client: pg.Client) => Promise<T>, { pinSearchPath = true } = {}): Promise<T> {
    assertPhysicalName(physicalName);
    const client = new pg.Client({
      connectionString: databaseUrl(this.adminUrl, physicalName),
      options: pinSearchPath ? PINNED_SEARCH_PATH_OPTIONS : undefined,
      connectionTimeoutMillis: this.connectTimeoutMs,
    });
    client.on('error', () => {});
    cutQueriesAtDeadline(client);
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }
}

/**
 * One driver per distinct cluster URL; regions sharing a cluster share its driver. A database on
 * dedicated compute is reached on its instance's server, whose superuser URL `instanceAdminUrl`
 * gives (the compute driver knows it).
 */
export class PgClusterDirectory implements ClusterDirectory, LoginRoles {
  private readonly drivers = new Map<string, PgClusterDriver>();

  constructor(
    private readonly served: readonly Region[],
    private readonly urls: Readonly<Record<Region, string>>,
    private readonly instanceAdminUrl: (instanceId: string) => string | null = () => null,
    private readonly limits: DatabaseLimits = DATABASE_LIMIT_DEFAULTS,
    private readonly onRoleRepaired: RoleRepairLog = () => {},
    private readonly connectTimeoutMs = CLUSTER_CONNECT_TIMEOUT_MS,
  ) {}

  /** The start-up pass of every served region's cluster (see PgClusterDriver.applyLimits); clusters shared by regions once. */
  async applyLimits(): Promise<{ roles: number; databases: number }> {
    const total = { roles: 0, databases: 0 };
    for (const driver of this.servedClusters()) {
      const changed = await driver.applyLimits();
      total.roles += changed.roles;
      total.databases += changed.databases;
    }
    return total;
  }

  forDatabase(database: Pick<Database, 'region' | 'instanceId' | 'server'>): ClusterDriver {
    return this.driverForDatabase(database);
  }

  regions(): readonly Region[] {
    return this.served;
  }

  /** Audits the customer roles of every served region's cluster (each cluster once). */
  async auditCustomerRoles(): Promise<CustomerRoleRepair[]> {
    const repairs: CustomerRoleRepair[] = [];
    for (const driver of this.servedClusters()) repairs.push(...(await driver.auditCustomerRoles()));
    return repairs;
  }

  /** The served regions' clusters, each once (regions may share one; a URL has one driver). */
  private servedClusters(): Set<PgClusterDriver> {
    return new Set(this.served.map((region) => this.driverFor(region)));
  }

  forRegion(region: Region): ClusterDriver {
    return this.driverFor(region);
  }

  createLoginRole(database: Database, input: { password: string; tenantId: string | null }): Promise<string> {
    return this.driverForDatabase(database).createLoginRole(database.physicalName, input);
  }

  dropLoginRole(database: Database, roleName: string): Promise<void> {
    return this.driverForDatabase(database).dropLoginRole(database.physicalName, roleName);
  }

  async close(): Promise<void> {
    await Promise.all([...this.drivers.values()].map((driver) => driver.close()));
    this.drivers.clear();
  }

  private driverFor(region: Region): PgClusterDriver {
    if (!this.served.includes(region)) {
      throw new UnavailableError('region_not_served', `Region ${region} is not served by this platform`);
    }
    return this.driverAt(this.urls[region], this.urls[region], true);
  }

  private driverForDatabase(database: Pick<Database, 'region' | 'instanceId' | 'server'>): PgClusterDriver {
    if (!database.server || !database.instanceId) return this.driverFor(database.region);
    const url = this.instanceAdminUrl(database.instanceId);
    if (!url) throw new UnavailableError('database_unavailable', 'The database’s compute instance is not reachable from here; try again shortly');
    return this.driverAt(url, this.urls[database.region], false);
  }

  private driverAt(url: string, secretUrl: string, shared: boolean): PgClusterDriver {
    let driver = this.drivers.get(url);
    if (!driver) {
      driver = new PgClusterDriver(url, secretUrl, this.limits, shared, this.onRoleRepaired, this.connectTimeoutMs);
      this.drivers.set(url, driver);
    }
    return driver;
  }
}
