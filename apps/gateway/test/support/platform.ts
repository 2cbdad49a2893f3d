import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDevelopmentCertificates } from '@platform/dev-tls';
import { createDatabase, createTestControlPlane, developerWithWorkspace, startAppProcess, uniqueDatabaseName, waitForStatus, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { eventually, freePort, query, startTestPostgres, type TestPostgres } from '@platform/testing';

const ISSUER = 'http://oauth.test';
const AUDIENCE = 'http://api.test';

/** The platform a gateway test file drives: PostgreSQL, the control plane, apps/api and apps/gateway as processes. */
export interface GatewayPlatform {
  postgres: TestPostgres;
  controlPlane: TestControlPlane;
  api: AppProcess;
  gateway: AppProcess;
  /** Where PostgreSQL clients connect (the host is `localhost`, which the certificate names). */
  gatewayPort: number;
  /** The pooled endpoint's port, when the platform was started with one (`pooled`). */
  pooledPort: number | null;
  /** The development CA that signed the gateway's certificate (PEM), and its file. */
  ca: string;
  caPath: string;
  env: Record<string, string>;
  /** A developer's workspace with a READY database in it. */
  newDatabase(name?: string): Promise<TestDatabase>;
  /** The gateway's counters, from its admin /metrics. */
  metrics(): Promise<Map<string, number>>;
  /**
   * Another gateway process on a port of its own, against the same control plane and cluster; the caller stops it.
   * `spawned` has its process as soon as it exists, before it serves.
   */
  startAnotherGateway(env?: Record<string, string>, options?: { spawned?: (child: ChildProcess) => void }): Promise<{ process: AppProcess; port: number }>;
  /** Rows of one statement run as the cluster's superuser in `database` (its physical name). */
  superuserQuery<R extends pg.QueryResultRow = any>(database: string, sql: string, params?: unknown[]): Promise<R[]>;
  /** The cluster's superuser name and password (the gateway must never relay them). */
  superuser: { user: string; password: string };
  stop(): Promise<void>;
}

export interface TestDatabase {
  token: string;
  slug: string;
  name: string;
  id: string;
  dbHost: string;
  /** The database's path in the management API. */
  D: string;
  /** POST D/credentials, expecting 201. */
  newCredential(tenantId?: string): Promise<TestCredential>;
  /** POST D/tenants, expecting 201; answers the tenant's id. */
  newTenant(name: string): Promise<string>;
  /** POST D/tenants/{tenantId}/users, expecting 201; answers the user's id. */
  newUser(tenantId: string, email: string): Promise<string>;
  /** DELETE D/credentials/{id}, expecting 204. */
  deleteCredential(id: string): Promise<void>;
  /** DELETE D, expecting 204. */
  deleteDatabase(): Promise<void>;
}

export interface TestCredential {
  id: string;
  password: string;
  tenantId: string | null;
  connectionUrl: string;
  pooledConnectionUrl: string | null;
}

/**
 * Starts everything once per file. `gatewayEnv` adds to (or overrides) the gateway's environment,
 * e.g. short timeouts for the tests of bad clients.
 */
export async function startGatewayPlatform(gatewayEnv: Record<string, string> = {}, options: { pooled?: boolean } = {}): Promise<GatewayPlatform> {
  const postgres = await startTestPostgres();
  const controlPlane = await createTestControlPlane(postgres, { issuer: ISSUER, audience: AUDIENCE });
  const certificates = mkdtempSync(join(tmpdir(), 'gateway-tls-'));
  const tls = await ensureDevelopmentCertificates(certificates, ['localhost', '127.0.0.1', '::1']);
  const gatewayPort = await freePort();
  const pooledPort = options.pooled ? await freePort() : null;
  const superuserUrl = new URL(postgres.adminUrl);
  const env: Record<string, string> = {
    ...controlPlane.env,
    PUBLIC_BASE_URL: AUDIENCE,
    OAUTH_ISSUER: ISSUER,
    LOG_LEVEL: 'error',
    RECONCILE_INTERVAL_MS: '200',
    GATEWAY_PORT: String(gatewayPort),
    GATEWAY_PUBLIC_URL: `postgres://localhost:${gatewayPort}`,
    GATEWAY_TLS_CERT: tls.serverCert,
    GATEWAY_TLS_KEY: tls.serverKey,
    // The protocol tests hold 200 sessions of one database, past the default cap of 100 per database.
    DATABASE_MAX_CONNECTIONS: '300',
    // One process unless a test asks for more (workers.test.ts): the caps tests count one process's slots.
    GATEWAY_WORKERS: '1',
    // apps/api names the pooled endpoint in new credentials' answers; apps/gateway listens there.
    ...(pooledPort === null ? {} : { GATEWAY_POOLED_PORT: String(pooledPort), GATEWAY_POOLED_PUBLIC_URL: `postgres://localhost:${pooledPort}` }),
  };
  const gateway = await startAppProcess('apps/gateway/src/main.ts', { portVariable: 'GATEWAY_ADMIN_PORT', env: { ...env, ...gatewayEnv } });
  const api = await startAppProcess('apps/api/src/main.ts', { portVariable: 'API_PORT', env });
  const request = api.request;
  const p = { controlPlane, request };

  async function newDatabase(name = uniqueDatabaseName()): Promise<TestDatabase> {
    const { token, slug } = await developerWithWorkspace(p);
    await createDatabase(p, token, slug, name);
    const ready = await waitForStatus(p, token, slug, name, 'READY');
    const D = `/workspaces/${slug}/databases/${name}`;
    return {
      token,
      slug,
      name,
      id: ready.id,
      dbHost: ready.dbHost,
      D,
      async newCredential(tenantId?: string) {
        const created = await request('POST', `${D}/credentials`, { token, json: tenantId ? { tenantId } : undefined });
        if (created.status !== 201) throw new Error(`POST ${D}/credentials answered ${created.status}: ${created.text}`);
        return created.body;
      },
      async newTenant(tenantName: string) {
        const created = await request('POST', `${D}/tenants`, { token, json: { name: tenantName } });
        if (created.status !== 201) throw new Error(`POST ${D}/tenants answered ${created.status}: ${created.text}`);
        return created.body.id;
      },
      async newUser(tenantId: string, email: string) {
        const created = await request('POST', `${D}/tenants/${tenantId}/users`, { token, json: { email, password: 'correct horse battery staple', name: email } });
        if (created.status !== 201) throw new Error(`POST ${D}/tenants/${tenantId}/users answered ${created.status}: ${created.text}`);
        return created.body.id;
      },
      async deleteCredential(id: string) {
        const deleted = await request('DELETE', `${D}/credentials/${id}`, { token });
        if (deleted.status !== 204) throw new Error(`DELETE ${D}/credentials/${id} answered ${deleted.status}: ${deleted.text}`);
      },
      async deleteDatabase() {
        const deleted = await request('DELETE', D, { token });
        if (deleted.status !== 200) throw new Error(`DELETE ${D} answered ${deleted.status}: ${deleted.text}`);
      },
    };
  }

  async function startAnotherGateway(extra: Record<string, string> = {}, options: { spawned?: (child: ChildProcess) => void } = {}) {
    const port = await freePort();
    const started = await startAppProcess('apps/gateway/src/main.ts', {
      portVariable: 'GATEWAY_ADMIN_PORT',
      spawned: options.spawned,
      env: { ...env, ...gatewayEnv, GATEWAY_PORT: String(port), GATEWAY_PUBLIC_URL: `postgres://localhost:${port}`, ...(pooledPort === null ? {} : { GATEWAY_POOLED_PORT: '0' }), ...extra },
    });
    return { process: started, port };
  }

  async function metrics(): Promise<Map<string, number>> {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const values = new Map<string, number>();
    for (const line of text.split('\n')) {
      const match = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
      if (match) values.set(match[1], Number(match[2]));
    }
    return values;
  }

  return {
    postgres,
    controlPlane,
    api,
    gateway,
    gatewayPort,
    pooledPort,
    ca: readFileSync(tls.caCert, 'utf8'),
    caPath: tls.caCert,
    env,
    newDatabase,
    metrics,
    startAnotherGateway,
    superuserQuery: (database, sql, params = []) => query(postgres.urlFor(database), sql, params),
    superuser: { user: decodeURIComponent(superuserUrl.username), password: decodeURIComponent(superuserUrl.password) },
    async stop() {
      await api.stop();
      await gateway.stop();
      await controlPlane.close();
      await postgres.stop();
      rmSync(certificates, { recursive: true, force: true });
    },
  };
}

/** A node-postgres client over TLS that verifies the gateway against the development CA; the caller ends it. */
export async function connectVerified(p: GatewayPlatform, credential: TestCredential, overrides: Partial<pg.ClientConfig> = {}): Promise<pg.Client> {
  const url = new URL(credential.connectionUrl);
  const client = new pg.Client({
    host: url.hostname,
    port: Number(url.port),
    database: decodeURIComponent(url.pathname.slice(1)),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    ssl: { ca: p.ca, servername: url.hostname },
    ...overrides,
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Waits until `credential` has a session running a statement that starts with `prefix`; answers the backend's pid. */
export async function runningStatement(p: GatewayPlatform, credential: TestCredential, prefix: string): Promise<number> {
  return eventually(async () => {
    const rows = await p.superuserQuery('postgres', "select pid from pg_stat_activity where usename = $1 and state = 'active' and query like $2", [credential.id, `${prefix}%`]);
    return rows.length === 1 ? (rows[0].pid as number) : undefined;
  }, 10_000, `${prefix} to run`);
}

/** PostgreSQL 18's client tools, as tools/pg-client-tools.mjs puts them in place: libpq 18 (protocol 3.2, direct TLS). */
const CLIENT_18_BIN = fileURLToPath(new URL('../../../../.data/pg-client-18/bin/', import.meta.url));
export const PSQL_18 = join(CLIENT_18_BIN, 'psql');
export const PG_DUMP_18 = join(CLIENT_18_BIN, 'pg_dump');

/** The libpq connection string of `credential` through the gateway, verified against the development CA, with `extra` settings. */
export function conninfoOf(p: GatewayPlatform, credential: TestCredential, extra: string[] = []): string {
  const url = new URL(credential.connectionUrl);
  const database = decodeURIComponent(url.pathname.slice(1));
  return [`host=${url.hostname}`, `port=${url.port}`, `dbname=${database}`, `user=${decodeURIComponent(url.username)}`, 'sslmode=verify-full', `sslrootcert=${p.caPath}`, ...extra].join(' ');
}

export interface PsqlResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs Debian's psql 15 (or `binary`, e.g. PSQL_18) against the gateway as `credential` (unaligned,
 * tuples only, stopping at the first error): `-c` for each command, `stdin` piped in (for
 * `\copy ... from pstdin`), `conninfo` added to the connection string.
 */
export async function psql(
  p: GatewayPlatform,
  credential: TestCredential,
  commands: string[],
  options: { sslmode?: 'verify-full' | 'require' | 'disable'; stdin?: string; options?: string; database?: string; binary?: string; conninfo?: string[] } = {},
): Promise<PsqlResult> {
  const url = new URL(credential.connectionUrl);
  const conninfo = [
    `host=${url.hostname}`,
    `port=${url.port}`,
    `dbname=${options.database ?? decodeURIComponent(url.pathname.slice(1))}`,
    `user=${decodeURIComponent(url.username)}`,
    `sslmode=${options.sslmode ?? 'verify-full'}`,
    ...(options.sslmode === undefined || options.sslmode === 'verify-full' ? [`sslrootcert=${p.caPath}`] : []),
    ...(options.options ? [`options='${options.options.replace(/['\\]/g, (char) => `\\${char}`)}'`] : []),
    ...(options.conninfo ?? []),
  ].join(' ');
  const args = ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', ...commands.flatMap((command) => ['-c', command]), conninfo];
  // PGPASSWORD rather than the URL: the password stays out of the process list.
  const child = spawn(options.binary ?? '/usr/bin/psql', args, { env: { PATH: process.env.PATH, PGPASSWORD: credential.password, PGCONNECT_TIMEOUT: '10' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  child.stdin.on('error', () => {});
  child.stdin.end(options.stdin ?? '');
  const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { status, stdout, stderr };
}
