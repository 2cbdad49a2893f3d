/**
 * Setup shared by this library's tests against real PostgreSQL; it declares no tests of its own.
 * Databases get the built-in schema from this library's own installer, as provisioning does.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import type { DataPlaneRepositories, Database } from '@platform/domain';
import { createScratchDatabase, dropScratchDatabase, startTestPostgres, withClient, type ScratchDatabase, type TestPostgres } from '@platform/testing';
import { dropCredentialRole, dropDatabaseRoles } from './credential-roles.js';
import { PgDataPlane } from './pg-data-plane.js';
import { ConnectionBudget, type ConnectionBudgetOptions } from './connection-budget.js';
import { installBuiltInSchema } from './schema-installer.js';
import { enableServiceLogin, serviceUrl } from './service-role.js';

/** An open client that ignores errors raised after its session ended (a test ends sessions on purpose). */
export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * The end of a test file that made credentials in one scratch database: their roles, the database
 * and its roles go, then the connections and the server.
 */
export async function dropCredentialDatabase(fixture: {
  postgres: TestPostgres;
  admin: pg.Client;
  database: pg.Client;
  name: string;
  credentials: string[];
}): Promise<void> {
  const { postgres, admin, database, name } = fixture;
  for (const role of fixture.credentials) await dropCredentialRole(admin, database, { physicalName: name, roleName: role });
  await database?.end();
  await dropScratchDatabase(postgres, name);
  await dropDatabaseRoles(admin, name);
  await admin?.end();
  await postgres?.stop();
}

/** The first column of every row. */
export async function firstColumn<T = string>(
  client: { query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }> },
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const result = await client.query(sql, params);
  return result.rows.map((row) => Object.values(row)[0] as T);
}

/** The URL a credential logs in with: the server's, with the role, its password and the database. */
export function credentialUrl(serverUrl: string, database: string, credential: { role: string; password: string }): string {
  const url = new URL(databaseUrl(serverUrl, database));
  url.username = credential.role;
  url.password = credential.password;
  return url.toString();
}

/** A scratch database with the built-in schema installed. */
export async function createBuiltInDatabase(server: TestPostgres, prefix: string): Promise<ScratchDatabase> {
  const database = await createScratchDatabase(server, prefix);
  await withClient(database.url, installBuiltInSchema);
  return database;
}

/** The control plane's record of a READY platform database whose physical database is `physicalName`. */
export function readyDatabase(physicalName: string): Database {
  const created = new Date();
  return {
    id: randomUUID(),
    workspace: { id: randomUUID(), name: 'Tests', slug: 'tests', billingCustomerId: null, created },
    name: 'app',
    region: 'AWS_US_WEST_2',
    status: 'READY',
    physicalName,
    created,
    updated: created,
    deleted: null,
  };
}

export interface ScratchDataPlane {
  server: TestPostgres;
  connections: ConnectionBudget;
  dataPlane: PgDataPlane;
  /** A new database with the built-in schema, and its repositories as the API opens them. */
  newDatabase(prefix?: string): Promise<ScratchDatabase & { record: Database; repos: DataPlaneRepositories }>;
  /** Closes the connections, drops the databases and stops the server. */
  close(): Promise<void>;
}

/**
 * A test server and a PgDataPlane over it that reaches each database as the API does: as the
 * database's service role, whose login is enabled at the first refusal (the repair path).
 */
export async function startScratchDataPlane(options: ConnectionBudgetOptions = {}): Promise<ScratchDataPlane> {
  const server = await startTestPostgres();
  const connections = new ConnectionBudget(options);
  const dataPlane = new PgDataPlane(
    connections,
    (database) => serviceUrl(server.adminUrl, database.physicalName),
    // As the API's repair: through the database first (a missing one answers 3D000), then the login.
    async (database) => {
      await withClient(server.urlFor(database.physicalName), installBuiltInSchema);
      await withClient(server.adminUrl, (admin) => enableServiceLogin(admin, server.adminUrl, database.physicalName));
    },
  );
  const created: string[] = [];
  return {
    server,
    connections,
    dataPlane,
    async newDatabase(prefix = 'dp') {
      const database = await createBuiltInDatabase(server, prefix);
      created.push(database.name);
      const record = readyDatabase(database.name);
      return { ...database, record, repos: dataPlane.open(record) };
    },
    async close() {
      await connections.close();
      await Promise.all(created.splice(0).map((name) => dropScratchDatabase(server, name)));
      await server.stop();
    },
  };
}
