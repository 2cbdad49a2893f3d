// `npm run bench:gateway [-- --seconds 15 --clients 8,64 --workloads select-only,tpcb-like --scale 10 --rounds 1 --warmup 3
//   --protocol simple --profile --aa]`:
// pgbench through the PostgreSQL gateway (apps/gateway, separate processes as in production) side
// by side with the same credential straight on the cluster and through PgBouncer (session pooling).
// Targets, each measured alone, one after another:
//   direct             the cluster's port, the database's physical name, the credential's role and password
//   pgbouncer          PgBouncer (tools/pgbouncer.mjs's, else the system's), pool_mode=session, no TLS, to the same
//                      database as the same role
//   node-relay         a bare Node TCP relay (node-relay.ts) to the cluster's port: no routing, TLS or counting;
//                      the floor under any proxy written for Node, to tell Node's cost from the gateway's own
//   gateway            apps/gateway, GATEWAY_ALLOW_PLAIN=true, sslmode=disable
//   gateway-uncounted  the same with GATEWAY_COUNT_QUERIES=false: what counting costs (with --aa it counts too:
//                      an A/A pair of identical processes, whose differences are this machine's noise)
//   gateway-tls        apps/gateway with TLS (a development CA), PGSSLMODE=require
// Workloads: pgbench's select-only (-S) and TPC-B-like scripts at each client count (-j 2), each for
// --seconds after a --warmup run of the same shape on the same target (JIT, pools, caches); every
// transaction is logged (pgbench --log), which gives exact percentiles. The tables come from
// pgbench -i -s <scale> run once as the credential (unscoped: they are handed to the database's owner
// role and stay plain tables, no tenant_id, no row-level security). Setup: an embedded PostgreSQL (or
// DATABASE_URL's server), a control plane, apps/api as a process to provision the database and the
// credential (stopped before measuring), all over loopback, within a time limit; Ctrl-C or a failure
// stops everything started. With --rounds N each figure is the median of the N rounds (counting's cost: of the N paired rounds). Exits 0 when
// every goal below is met, 1 otherwise (or on a failure). With --profile the gateways run under
// --cpu-prof (slower: its figures are not the reference) and the top functions are printed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ensureDevelopmentCertificates } from '@platform/dev-tls';
import { freePort, query, type TestPostgres } from '@platform/testing';
import type { AppProcess, TestControlPlane } from '@platform/test-fixtures';
import { summarizeProfiles } from './cpu-profiles.js';
import {
  endedChildrenCpuMs,
  initialisePgbench,
  machineCpuMs,
  postgresCpuMs,
  postmasterOf,
  processCpuMs,
  runPgbench,
  WORKLOADS,
  type Target,
  type Workload,
} from './gateway-pgbench.js';
import { startNodeRelay, startPgbouncer } from './gateway-pgbouncer.js';
import { format, report, TARGET_KEYS, type BenchTarget, type Measurement } from './gateway-report.js';
import { expectStatus, provisionDatabase, runBench, sleep, startApiProcess, startControlPlane, startGatewayApp, Teardown } from './support.js';

/** Sessions one credential may hold (data-plane credential-roles.ts): PgBouncer's idle pool must be gone before another target's clients connect. */
const PGBOUNCER_SERVER_IDLE_SECONDS = 5;
/** Busy share of the 2 cores below which the machine counts as quiet before a run (ours idle then). */
const QUIET_BUSY_SHARE = 0.1;
const QUIET_WAIT_SECONDS = 20;

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    clients: { type: 'string', default: '8,64' },
    workloads: { type: 'string', default: WORKLOADS.map((w) => w.script).join(',') },
    scale: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '1' },
    protocol: { type: 'string', default: 'simple' },
    profile: { type: 'boolean', default: false },
    aa: { type: 'boolean', default: false },
  },
});
const settings = {
  seconds: positive('seconds', flags.seconds),
  warmup: positive('warmup', flags.warmup),
  clients: flags.clients.split(',').map((value) => positive('clients', value)),
  workloads: flags.workloads.split(',').map(workloadNamed),
  scale: positive('scale', flags.scale),
  rounds: positive('rounds', flags.rounds),
  protocol: oneOf('protocol', flags.protocol, ['simple', 'extended', 'prepared']),
  aa: flags.aa,
};
const profileDir = flags.profile ? resolve('tmp/bench-profiles', `gateway-${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;

function positive(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`--${name} must be a positive integer, got '${value}'`);
  return parsed;
}

function workloadNamed(script: string): Workload {
  const found = WORKLOADS.find((workload) => workload.script === script);
  if (!found) throw new Error(`--workloads takes ${WORKLOADS.map((workload) => workload.script).join(', ')}, got '${script}'`);
  return found;
}

function oneOf(name: string, value: string, allowed: string[]): string {
  if (!allowed.includes(value)) throw new Error(`--${name} must be one of ${allowed.join(', ')}, got '${value}'`);
  return value;
}

const teardown = new Teardown();

function startGatewayProcess(name: string, controlPlane: TestControlPlane, port: number, env: Record<string, string>): Promise<AppProcess> {
  const execArgv = profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, name)] : [];
  return startGatewayApp(controlPlane, port, env, execArgv).then((app) => teardown.add(app));
}

/** Through node-postgres: the target logs in as the credential and lands in the database's physical name. */
async function checkTarget(target: BenchTarget, physicalName: string, ca: string): Promise<void> {
  const client = new pg.Client({
    host: target.target.host,
    port: target.target.port,
    user: target.target.user,
    password: target.target.password,
    database: target.target.database,
    ssl: target.target.tls ? { ca, servername: 'localhost' } : false,
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ who: string; here: string }>('select current_user as who, current_database() as here');
    if (rows[0].who !== target.target.user || rows[0].here !== physicalName) {
      throw new Error(`${target.label}: logged in as ${rows[0].who} to ${rows[0].here}, expected ${target.target.user} to ${physicalName}`);
    }
  } finally {
    await client.end();
  }
}

/** Waits until the role holds no session on the cluster (PgBouncer's idle pool, a gateway's closing backends). */
async function waitForNoSessions(admin: pg.Client, role: string): Promise<void> {
  for (let waited = 0; ; waited += 200) {
    const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
    if (rows[0].n === 0) return;
    if (waited > (PGBOUNCER_SERVER_IDLE_SECONDS + 30) * 1000) throw new Error(`${rows[0].n} sessions of ${role} are still open`);
    await sleep(200);
  }
}

/** The pgbench tables: who owns them and whether row-level security is on, as the report says. */
async function describeTables(physicalName: string, postgres: TestPostgres): Promise<string> {
  const database = new pg.Client({ connectionString: postgres.urlFor(physicalName) });
  await database.connect();
  try {
    const { rows } = await database.query<{ name: string; owner: string; rls: boolean; rows: string }>(
      `select c.relname as name, pg_get_userbyid(c.relowner) as owner, c.relrowsecurity as rls, c.reltuples::bigint::text as rows
         from pg_class c where c.relname like 'pgbench\\_%' and c.relkind = 'r' order by 1`,
    );
    if (rows.length !== 4) throw new Error(`expected the 4 pgbench tables, found ${rows.map((row) => row.name).join(', ')}`);
    if (rows.some((row) => row.rls)) throw new Error('a pgbench table has row-level security: the tenant isolation took it for tenant-aware');
    return rows.map((row) => `${row.name} (owner ${row.owner}, ~${row.rows} rows)`).join(', ');
  } finally {
    await database.end();
  }
}

async function measure(
  target: BenchTarget,
  shape: { workload: Workload; clients: number },
  logPrefix: string,
  postmaster: number | null,
): Promise<Pick<Measurement, 'run' | 'proxyCpuMicrosPerTransaction' | 'proxyUserMicrosPerTransaction' | 'machineBusy' | 'otherCores'>> {
  const snapshot = () => ({
    proxy: processCpuMs(target.pid),
    machine: machineCpuMs(),
    pgbench: endedChildrenCpuMs(),
    postgres: postmaster === null ? null : postgresCpuMs(postmaster),
  });
  const before = snapshot();
  const run = await runPgbench(target.target, { ...shape, seconds: settings.seconds, protocol: settings.protocol, logPrefix });
  const after = snapshot();
  if (run.failed > 0) throw new Error(`${target.label}: ${run.failed} transactions failed`);
  const delta = (pick: (s: typeof before) => number | null) => {
    const [from, to] = [pick(before), pick(after)];
    return from === null || to === null ? null : to - from;
  };
  const proxyUserMs = delta((s) => s.proxy?.user ?? null);
  const proxyMs = delta((s) => (s.proxy ? s.proxy.user + s.proxy.system : null));
  const busyMs = delta((s) => s.machine?.busy ?? null);
  const totalMs = delta((s) => s.machine?.total ?? null);
  const pgbenchMs = delta((s) => s.pgbench);
  const postgresMs = delta((s) => s.postgres);
  // What processes other than pgbench, this PostgreSQL and the target's process took meanwhile, in cores.
  const otherCores =
    busyMs === null || totalMs === null || pgbenchMs === null || postgresMs === null
      ? null
      : Math.max(0, busyMs - pgbenchMs - postgresMs - (proxyMs ?? 0)) / (run.wallSeconds * 1000);
  return {
    run,
    proxyCpuMicrosPerTransaction: proxyMs === null ? null : (proxyMs * 1000) / run.transactions,
    proxyUserMicrosPerTransaction: proxyUserMs === null ? null : (proxyUserMs * 1000) / run.transactions,
    machineBusy: busyMs === null || totalMs === null ? null : busyMs / totalMs,
    otherCores,
  };
}

/** Waits (at most `limitSeconds`) until the machine is nearly idle for a second: another test run on it would skew a run. */
async function waitForQuietMachine(limitSeconds: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const before = machineCpuMs();
    await sleep(1000);
    const after = machineCpuMs();
    const waited = (performance.now() - started) / 1000;
    if (!before || !after || (after.busy - before.busy) / (after.total - before.total) < QUIET_BUSY_SHARE || waited >= limitSeconds) return waited;
  }
}

/** The gateway's count of queries (all databases and tenants), from /metrics; null when it counts nothing. */
async function countedQueries(adminUrl: string): Promise<number | null> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const counts = [...text.matchAll(/^gateway_queries_total\{[^}]*\} (\d+)$/gm)].map((match) => Number(match[1]));
  return counts.length ? counts.reduce((a, b) => a + b, 0) : null;
}

const runsPerRound = settings.workloads.length * settings.clients.length * TARGET_KEYS.length;
// Setup and pgbench -i, then each run's warm-up, its measurement, and waiting for sessions to close.
const perRun = settings.warmup + settings.seconds + PGBOUNCER_SERVER_IDLE_SECONDS + QUIET_WAIT_SECONDS + 20;
await runBench(300 + settings.scale * 10 + settings.rounds * runsPerRound * perRun, teardown, async () => {
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const scratch = teardown.add(mkdtempSync(join(tmpdir(), 'bench-gateway-')), async (dir) => rmSync(dir, { recursive: true, force: true }));
  const { postgres, controlPlane } = await startControlPlane(teardown);

  // The database and an unscoped credential, made through the API, which is then stopped: the
  // gateways need only the control plane, and its reconcilers would add work to the measurements.
  const api = teardown.add(await startApiProcess(controlPlane, { LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: '10' }));
  const databaseName = 'pgbench';
  const { developerToken, databasePath } = await provisionDatabase(controlPlane, api.request, { workspace: 'bench-gateway', database: databaseName });
  const created = await api.request('POST', `${databasePath}/credentials`, { token: developerToken });
  expectStatus(created, 201, 'create credential');
  const credential = created.body as { id: string; password: string; tenantId: string | null };
  await api.stop();
  const admin = teardown.add(new pg.Client({ connectionString: postgres.adminUrl }), (client) => client.end());
  await admin.connect();
  const [{ physical_name: physicalName }] = await query<{ physical_name: string }>(
    controlPlane.url,
    'select physical_name from databases where name = $1 and deleted is null',
    [databaseName],
  );
  const cluster = new URL(postgres.adminUrl);
  const clusterHost = cluster.hostname;
  const clusterPort = Number(cluster.port);
  const postmaster = postmasterOf(clusterPort);
  const as = { user: credential.id, password: credential.password };

  const tlsDir = teardown.add(mkdtempSync(join(tmpdir(), 'bench-gateway-tls-')), async (dir) => rmSync(dir, { recursive: true, force: true }));
  const certificates = await ensureDevelopmentCertificates(tlsDir, ['localhost', '127.0.0.1', '::1']);
  const ports = { gateway: await freePort(), uncounted: await freePort(), tls: await freePort() };
  const gateway = await startGatewayProcess('gateway', controlPlane, ports.gateway, { GATEWAY_ALLOW_PLAIN: 'true' });
  const uncounted = await startGatewayProcess('gateway-uncounted', controlPlane, ports.uncounted, {
    GATEWAY_ALLOW_PLAIN: 'true',
    GATEWAY_COUNT_QUERIES: settings.aa ? 'true' : 'false',
  });
  const secure = await startGatewayProcess('gateway-tls', controlPlane, ports.tls, { GATEWAY_TLS_CERT: certificates.serverCert, GATEWAY_TLS_KEY: certificates.serverKey });
  const maxClients = Math.max(...settings.clients);
  const bouncer = teardown.add(
    await startPgbouncer({
      name: databaseName,
      server: { host: clusterHost, port: clusterPort, database: physicalName },
      ...as,
      poolSize: maxClients + 4,
      serverIdleSeconds: PGBOUNCER_SERVER_IDLE_SECONDS,
    }),
  );

  const relay = teardown.add(await startNodeRelay({ host: clusterHost, port: clusterPort }));

  const viaGateway = (port: number, tls: boolean): Target => ({ host: '127.0.0.1', port, database: databaseName, tls, ...as });
  const targets: BenchTarget[] = [
    { key: 'direct', label: 'direct', target: { host: clusterHost, port: clusterPort, database: physicalName, tls: false, ...as } },
    { key: 'pgbouncer', label: 'pgbouncer (session)', target: { host: '127.0.0.1', port: bouncer.port, database: databaseName, tls: false, ...as }, pid: bouncer.pid },
    { key: 'node-relay', label: 'bare Node relay', target: { host: '127.0.0.1', port: relay.port, database: physicalName, tls: false, ...as }, pid: relay.pid },
    { key: 'gateway', label: 'gateway', target: viaGateway(ports.gateway, false), pid: gateway.child.pid, adminUrl: gateway.url },
    { key: 'gateway-uncounted', label: settings.aa ? 'gateway, A/A twin' : 'gateway, counting off', target: viaGateway(ports.uncounted, false), pid: uncounted.child.pid, adminUrl: uncounted.url },
    { key: 'gateway-tls', label: 'gateway, TLS', target: viaGateway(ports.tls, true), pid: secure.child.pid, adminUrl: secure.url },
  ];
  const ca = readFileSync(certificates.caCert, 'utf8');
  for (const target of targets) await checkTarget(target, physicalName, ca);
  console.log(`database ${databaseName} (physical ${physicalName}), credential ${credential.id} (unscoped: ${credential.tenantId === null}); every target logs in as it`);

  const initStarted = performance.now();
  await initialisePgbench(targets[0].target, settings.scale);
  console.log(`pgbench -i -s ${settings.scale} as the credential, direct: ${((performance.now() - initStarted) / 1000).toFixed(1)} s; ${await describeTables(physicalName, postgres)}`);
  await admin.query('checkpoint');
  // What the machine does without us (other work on a shared machine shows here).
  const quietBefore = machineCpuMs();
  await sleep(3000);
  const quietAfter = machineCpuMs();
  if (quietBefore && quietAfter) {
    console.log(`machine busy with nothing of ours running: ${format.percent((quietAfter.busy - quietBefore.busy) / (quietAfter.total - quietBefore.total))} of 2 cores`);
  }

  const measurements: Measurement[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    // Each round starts the targets one further on, so that none is always first or last.
    const order = TARGET_KEYS.map((_, i) => targets[(i + round - 1) % targets.length]);
    for (const workload of settings.workloads) {
      for (const clients of settings.clients) {
        for (const target of order) {
          await waitForNoSessions(admin, credential.id);
          const waited = await waitForQuietMachine(QUIET_WAIT_SECONDS);
          await runPgbench(target.target, { workload, clients, seconds: settings.warmup, protocol: settings.protocol });
          const logPrefix = join(scratch, `${round}-${workload.script}-${clients}-${target.key}`);
          const result = await measure(target, { workload, clients }, logPrefix, postmaster);
          measurements.push({ round, workload, clients, key: target.key, ...result });
          const { run } = result;
          console.log(
            `round ${round} ${workload.name.padEnd(11)} c=${String(clients).padStart(2)} ${target.label.padEnd(22)} ${format.tps(run.tps).padStart(6)} tps` +
              `  avg ${format.ms(run.averageMs)}  p50 ${format.ms(run.p50Ms)}  p99 ${format.ms(run.p99Ms)} ms  (${run.transactions} transactions)` +
              `${result.proxyCpuMicrosPerTransaction === null ? '' : `  proxy ${result.proxyCpuMicrosPerTransaction.toFixed(0)} µs CPU/txn (${result.proxyUserMicrosPerTransaction?.toFixed(0)} user)`}` +
              `${result.machineBusy === null ? '' : `  machine ${format.percent(result.machineBusy)} busy`}` +
              `${result.otherCores === null ? '' : `, others ${result.otherCores.toFixed(2)} cores`}${waited >= QUIET_WAIT_SECONDS ? ' (machine not quiet before)' : ''}`,
          );
        }
      }
    }
  }

  // The counting gateways counted at least every statement of the measured runs; the other nothing.
  for (const target of targets.filter((t) => t.adminUrl)) {
    const counted = await countedQueries(target.adminUrl!);
    const sent = measurements.filter((m) => m.key === target.key).reduce((sum, m) => sum + m.run.transactions * m.workload.statements, 0);
    const expectCounts = target.key !== 'gateway-uncounted' || settings.aa;
    if (expectCounts ? counted === null || counted < sent : counted !== null) {
      throw new Error(`${target.label}: /metrics counted ${counted} queries; the measured runs sent ${sent}`);
    }
    console.log(`${target.label}: /metrics counted ${counted ?? 'nothing'}${expectCounts ? ` (measured runs: ${sent} statements, the rest warm-ups and pgbench's own)` : ''}`);
  }

  const met = report(measurements, targets, settings, profileDir !== undefined);
  // The gateways write their profiles as they exit.
  for (const app of [gateway, uncounted, secure]) await app.stop();
  if (profileDir) summarizeProfiles(profileDir);
  return met;
});
