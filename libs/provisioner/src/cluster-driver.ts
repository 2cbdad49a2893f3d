import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { UnavailableError, type ClusterDirectory, type ClusterDriver, type Region } from '@platform/domain';
import { BUILT_IN_SCHEMA_VERSION, installBuiltInSchema, installedSchemaVersion } from '@platform/data-plane';

const PHYSICAL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function assertPhysicalName(name: string): void {
  // Physical names are generated, never user input; refuse anything else before it reaches SQL.
  if (!PHYSICAL_NAME.test(name)) throw new Error(`refusing physical database name '${name}'`);
}

/** A PostgreSQL cluster reached with an administrative URL (one that may create databases). */
export class PgClusterDriver implements ClusterDriver {
  private readonly admin: pg.Pool;

  constructor(private readonly adminUrl: string) {
    this.admin = new pg.Pool({ connectionString: adminUrl, max: 2, idleTimeoutMillis: 10_000 });
    this.admin.on('error', () => {});
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
    await this.withDatabase(physicalName, installBuiltInSchema);
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

  async dropDatabase(physicalName: string): Promise<void> {
    assertPhysicalName(physicalName);
    // FORCE ends the database's open sessions, which would otherwise block the drop.
    await this.admin.query(`drop database if exists ${physicalName} with (force)`);
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

  async close(): Promise<void> {
    await this.admin.end();
  }

  private async exists(physicalName: string): Promise<boolean> {
    const result = await this.admin.query('select 1 from pg_database where datname = $1', [physicalName]);
    return (result.rowCount ?? 0) > 0;
  }

  private async withDatabase<T>(physicalName: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
    assertPhysicalName(physicalName);
    const client = new pg.Client({ connectionString: databaseUrl(this.adminUrl, physicalName) });
    client.on('error', () => {});
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }
}

/** One driver per distinct cluster URL; regions sharing a cluster share its driver. */
export class PgClusterDirectory implements ClusterDirectory {
  private readonly drivers = new Map<string, PgClusterDriver>();

  constructor(
    private readonly served: readonly Region[],
    private readonly urls: Readonly<Record<Region, string>>,
  ) {}

  regions(): readonly Region[] {
    return this.served;
  }

  forRegion(region: Region): ClusterDriver {
    if (!this.served.includes(region)) {
      throw new UnavailableError('region_not_served', `Region ${region} is not served by this platform`);
    }
    const url = this.urls[region];
    let driver = this.drivers.get(url);
    if (!driver) {
      driver = new PgClusterDriver(url);
      this.drivers.set(url, driver);
    }
    return driver;
  }

  async close(): Promise<void> {
    await Promise.all([...this.drivers.values()].map((driver) => driver.close()));
    this.drivers.clear();
  }
}
